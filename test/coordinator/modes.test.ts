// Modes without a trainer: `explore` fills the buffer from an OpenAI-compatible endpoint (a real
// HTTP server on loopback that reverses the word), `bench` evaluates it; and `bench` on a saved
// checkpoint reproduces the accuracy the training run measured for that checkpoint.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { tinyConfig, tempWorkspace } from './tiny-config.js';

let server: Server;
let base = '';
let calls = 0;
before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      calls++;
      const r = JSON.parse(body) as { messages: { content: string }[] };
      const word = r.messages.at(-1)!.content.replace(/^rev /, '');
      const pieces = [...word].reverse();
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: pieces.join('') },
              finish_reason: 'stop',
              logprobs: { content: pieces.map((t) => ({ token: t, logprob: -0.5 })) },
            },
          ],
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

/** The tiny run's config in a mode without a trainer: what that mode does not read left out (config-reads.ts). */
function withMode(cfg: RunConfig, mode: 'explore' | 'bench', endpoint: boolean): RunConfig {
  const { experts: _experts, trainer: _trainer, stages: _stages, ...rest } = cfg;
  const { eval_sampling, endpoint: _endpoint, ...sampling } = cfg.explorer;
  const raw = {
    ...rest,
    mode,
    ...(mode === 'explore' ? { stages: [{ name: mode, algorithm: { name: 'grpo' }, steps: 3 }] } : {}),
    buffer: { storage: cfg.buffer.storage },
    explorer: {
      // Bench evaluates greedily, once per eval task: it reads eval_sampling, not the exploring fields.
      ...(mode === 'explore' ? sampling : {}),
      eval_sampling,
      ...(endpoint ? { endpoint: { base_url: base, model: 'reverser' } } : {}),
    },
  };
  const { config, issues } = validateRunConfig(raw);
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}

test('explore mode: the endpoint fills the buffer (version, log-probs, rewards), nothing is trained', async () => {
  const ws = tempWorkspace();
  try {
    const s = await runJob({
      config: withMode(tinyConfig({ sync_offset: 0 }), 'explore', true),
      workspace: ws,
      runId: 'ex',
    });
    assert.equal(s.trainer_steps, 0);
    assert.equal(s.explore_steps, 3);
    assert.equal(s.final_accuracy, 1, 'a perfect endpoint scores 1 on the eval split');
    const store = await openStore(join(s.run_dir, 'buffer.db'));
    try {
      const usual = await store.list({ runId: 'ex', source: 'usual', limit: 100 });
      assert.equal(usual.length, 3 * 2 * 2, '3 steps x 2 tasks x 2 samples');
      for (const e of usual) {
        assert.equal(e.reward, 1);
        assert.equal(e.status, 'ok');
        assert.ok(e.modelVersion > 0, 'stamped with the endpoint model version');
        assert.equal(e.logprobs.length, e.responseTokens.length);
        // The server's per-piece log-probs; the end token the client appends gets 0.
        assert.deepEqual(
          e.logprobs,
          [...e.responseText].map(() => -0.5).concat(e.logprobs.length > e.responseText.length ? [0] : []),
        );
      }
      assert.equal(
        await store.consumed('trainer', 0, 'ex').then((ids) => ids.length),
        0,
        'nothing was sampled for training',
      );
    } finally {
      await store.close();
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('explore mode stopped after its first step and resumed: the steps go on from 1, no group id is reused', async () => {
  const ws = tempWorkspace();
  try {
    // Stopped once the first step's 2 tasks x 2 samples were asked for (the step in flight finishes).
    const stop = new AbortController();
    const from = calls;
    const poll = setInterval(() => {
      if (calls - from >= 4) stop.abort('stop');
    }, 5);
    const first = await runJob({
      config: withMode(tinyConfig({ sync_offset: 0 }), 'explore', true),
      workspace: ws,
      runId: 'exr',
      signal: stop.signal,
    }).finally(() => clearInterval(poll));
    assert.ok(first.explore_steps < 3, `stopped early (explored ${first.explore_steps})`);
    const s = await runJob({ resume: 'exr', workspace: ws });
    assert.equal(s.explore_steps, 3);
    const store = await openStore(join(s.run_dir, 'buffer.db'));
    try {
      const usual = await store.list({ runId: 'exr', source: 'usual', limit: 100 });
      assert.equal(usual.length, 3 * 2 * 2, '3 steps x 2 tasks x 2 samples, each step explored once');
      const groups = new Map<string, number>();
      for (const e of usual) groups.set(e.groupId, (groups.get(e.groupId) ?? 0) + 1);
      assert.equal(groups.size, 3 * 2, `one group per step and task: ${[...groups.keys()].join(', ')}`);
      for (const [g, n] of groups) assert.equal(n, 2, `group ${g} holds its own 2 samples`);
      // Group ids are run:split:step:task; a resume that counted from 0 again labelled step 1 as 0.
      const steps = [...groups.keys()].map((g) => Number(g.split(':').at(-2))).sort();
      assert.deepEqual(steps, [0, 0, 1, 1, 2, 2], 'each step numbered once, on from the stop');
    } finally {
      await store.close();
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('explore mode without a reachable endpoint: infra failures, never reward 0', async () => {
  const ws = tempWorkspace();
  try {
    const cfg = withMode(tinyConfig({ sync_offset: 0 }), 'explore', false);
    cfg.explorer.endpoint = { base_url: 'http://127.0.0.1:9', model: 'down', concurrency: 1, timeout_ms: 2000 };
    cfg.stages = [{ ...cfg.stages![0]!, steps: 1 }];
    const s = await runJob({ config: cfg, workspace: ws, runId: 'down' });
    const store = await openStore(join(s.run_dir, 'buffer.db'));
    try {
      const usual = await store.list({ runId: 'down', source: 'usual', limit: 100 });
      assert.ok(usual.length > 0);
      assert.ok(
        usual.every((e) => e.status === 'infra_failure'),
        usual.map((e) => e.status).join(','),
      );
    } finally {
      await store.close();
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('bench mode on a checkpoint reproduces the accuracy the run measured for it', async () => {
  const ws = tempWorkspace();
  try {
    const trained = await runJob({ config: tinyConfig({ sync_offset: 0 }, 2), workspace: ws, runId: 'tr' });
    const cfg = withMode(tinyConfig({ sync_offset: 0 }), 'bench', false);
    cfg.model.checkpoint = trained.checkpoint;
    const b = await runJob({ config: cfg, workspace: ws, runId: 'bn' });
    assert.equal(b.trainer_steps, 0);
    assert.equal(b.final_accuracy, trained.final_accuracy);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('calls reached the endpoint', () => assert.ok(calls > 0));

test('without an eval set: bench is refused naming eval, explore runs and reports null accuracies with the reason', async () => {
  const ws = tempWorkspace();
  try {
    const file = join(ws, 'few.jsonl');
    writeFileSync(
      file,
      ['ab', 'cd', 'ef']
        .map((w, i) => JSON.stringify({ id: `f${i}`, prompt: `reverse: ${w}`, answer: [...w].reverse().join('') }))
        .join('\n') + '\n',
    );
    const small = (mode: 'bench' | 'explore'): RunConfig => {
      const c = withMode(tinyConfig({ sync_offset: 0 }), mode, mode === 'explore');
      return { ...c, taskset: { ...c.taskset, builtin: undefined, path: file }, eval: undefined };
    };
    await assert.rejects(
      runJob({ config: small('bench'), workspace: ws, runId: 'b0' }),
      /mode bench needs an eval set; none: no eval given and the taskset has 3 task\(s\)/,
    );
    const s = await runJob({ config: small('explore'), workspace: ws, runId: 'e0' });
    assert.deepEqual([s.base_accuracy, s.final_accuracy, s.evals], [null, null, []]);
    assert.match(s.eval_set, /^none: /);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
