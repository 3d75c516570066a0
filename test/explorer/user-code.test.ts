// workflow.file code runs in a thread of its own (explorer/user-code/host.ts): a reward, workflow or
// environment that calls process.exit, loops for ever or throws costs the call that met it — an
// infra_failure with the reason — and the next call works again (a fresh thread). This process (the
// "run") lives on through all of it: were the code in it, the first process.exit(0) would end the
// test runner here and a for(;;) would hang it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCustomFile } from '../../backend/explorer/custom.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';
import type { WorkflowContext } from '../../backend/explorer/workflow.js';
import { workflows } from '../../backend/explorer/workflows/index.js';
import { environments } from '../../backend/explorer/environments/index.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { LocalRolloutModel } from '../../backend/explorer/local-model.js';
import { Transformer } from '../../backend/model/transformer.js';
import { presetConfig } from '../../backend/model/config.js';
import { UserCodeHost } from '../../backend/explorer/user-code/host.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-user-code-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const task = (id: string, prompt = 'p') => ({ id, taskset: 'x', domain: 'text' as const, prompt, answer: 'yes' });

// What the code does is chosen by the text it is given: exit, loop (synchronous), hang (a promise
// that never settles), throw (on line 6), else it answers.
const ACT = `function act(what) {
  if (what === 'exit') process.exit(0);
  if (what === 'exit3') process.exit(3);
  if (what === 'loop') for (;;) {}
  if (what === 'hang') return new Promise(() => {});
  if (what === 'throw') throw new Error('boom');
}
`;
const file = join(dir, 'hostile.mjs');
writeFileSync(
  file,
  `${ACT}export default function (rft) {
  rft.register('reward', 'hostile_r', async (task, response) => { await act(response); return 1; });
  rft.register('workflow', 'hostile_wf', async (tasks, ctx) => {
    await act(tasks[0].prompt);
    // A good batch: samples the model, scores them with the run's reward.
    const prompts = tasks.map((t) => ctx.model.tokenizer.encode(t.prompt));
    const gens = await ctx.model.generate(prompts, { ...ctx.sampling, seed: ctx.seed });
    return Promise.all(gens.map(async (g, i) => ({ id: 'x' + i + Math.random(), taskId: tasks[i].id, groupId: 'g', runId: ctx.runId, source: 'usual',
      promptTokens: prompts[i], promptText: tasks[i].prompt, responseTokens: g.tokens, responseText: g.text, actionMask: g.tokens.map(() => 1),
      logprobs: g.logprobs, modelVersion: ctx.model.version, reward: (await ctx.reward(tasks[i], g.text)).reward, status: 'ok', useCount: 0, createdAt: 0, split: ctx.split })));
  });
  rft.register('environment', 'hostile_env', { create: (task) => { act(task.prompt); return { step: (a) => { act(a); return { reward: 0.5, done: true }; } }; } });
}
`,
);
let loading: ReturnType<typeof loadCustomFile> | undefined;
const load = () => (loading ??= loadCustomFile(file, { timeoutMs: 500 }));

const failures: [string, RegExp][] = [
  ['exit', /its thread ended \(process\.exit\(0\) in .*hostile\.mjs\)/],
  ['exit3', /process\.exit\(3\)/],
  [
    'loop',
    /did not return within 0\.5 s \(workflow\.code_timeout_seconds\) and its thread stopped answering \(a synchronous loop\?\): the thread was stopped/,
  ],
  ['throw', new RegExp(`threw at ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:6: boom`)],
];

test('a reward that exits, loops or throws is an infra_failure with the reason; the next call is scored again', async () => {
  await load();
  const reward = rewardFns.get('hostile_r');
  for (const [what, why] of failures) {
    const r = await reward(task('t'), what);
    assert.equal(r.status, 'infra_failure', what);
    assert.equal(r.reward, 0);
    assert.match(r.reason!, /^custom reward 'hostile_r' /);
    assert.match(r.reason!, why);
    assert.deepEqual(await reward(task('t'), 'fine'), { reward: 1, status: 'ok' }, `scored again after ${what}`);
  }
  // A promise that never settles: the call fails at its limit; the thread still answers, so it is kept.
  const hung = await reward(task('t'), 'hang');
  assert.match(hung.reason!, /did not return within 0\.5 s \(workflow\.code_timeout_seconds\)$/);
  // Calls at once in one thread: the one that exits fails alone; the others in the thread at that moment are run again, one at a time.
  const many = await Promise.all(['fine', 'exit', 'fine', 'loop', 'fine'].map((w) => reward(task('t'), w)));
  assert.match(many[1]!.reason!, /process\.exit\(0\)/);
  assert.match(many[3]!.reason!, /synchronous loop/);
  for (const i of [0, 2, 4])
    assert.deepEqual(many[i], { reward: 1, status: 'ok' }, `call ${i} did not end the thread: scored`);
  assert.deepEqual(await reward(task('t'), 'fine'), { reward: 1, status: 'ok' });
});

test('a workflow that exits, loops or throws gives one infra_failure row per sample with the reason; a good one samples the model', async () => {
  await load();
  const tok = CharTokenizer.train(['abcdefgh exit loop throw']);
  const m = new Transformer(presetConfig('tiny-0.4m', tok.vocabSize, { maxSeqLen: 64 }), 1);
  try {
    const ctx: WorkflowContext = {
      model: new LocalRolloutModel(m, tok, 7),
      reward: rewardFns.get('hostile_r'),
      runId: 'run',
      repeatTimes: 3,
      sampling: { maxNewTokens: 4, temperature: 1, topK: 0, topP: 1, stopTokens: [] },
      step: 2,
      seed: 1,
      split: 'train',
    };
    const wf = workflows.get('hostile_wf');
    for (const [what, why] of failures) {
      const rows = await wf.run([task('a', what), task('b', what)], ctx);
      assert.equal(rows.length, 6, `${what}: 2 tasks x 3 samples`);
      for (const e of rows) {
        assert.equal(e.status, 'infra_failure', what);
        assert.equal(e.reward, 0);
        assert.match(e.statusReason!, /^custom workflow 'hostile_wf' /);
        assert.match(e.statusReason!, why);
        assert.equal(e.modelVersion, 7);
        assert.equal(e.groupId, `run:train:2:${e.taskId}`);
      }
      // The next batch runs in a fresh thread: sampled by the model (through the explorer), scored by the reward.
      const good = await wf.run([task('c', 'abc')], ctx);
      assert.equal(good.length, 1);
      assert.equal(good[0]!.status, 'ok');
      assert.equal(good[0]!.modelVersion, 7);
      assert.equal(good[0]!.responseTokens.length > 0, true);
      assert.equal(good[0]!.reward, 1);
    }
  } finally {
    m.dispose();
  }
});

test('an environment whose create or step exits, loops or throws fails that episode with the reason; the next one runs', async () => {
  await load();
  const env = environments.get('hostile_env');
  for (const [what, why] of failures) {
    assert.throws(
      () => env.create(task('e', what)),
      (e: Error) => /^custom environment 'hostile_env' /.test(e.message) && why.test(e.message),
      what,
    );
    const s = env.create(task('e', 'fine'));
    assert.throws(
      () => s.step(what),
      (e: Error) => why.test(e.message),
      `step ${what}`,
    );
    assert.deepEqual(env.create(task('e', 'fine')).step('fine'), { reward: 0.5, done: true }, `after ${what}`);
  }
});

// Rewards that take a while: busy blocks its thread for N ms (synchronously), wait awaits N ms,
// stray leaves a synchronous loop in a timer after it has returned, late_loop loops after N ms.
const queueFile = join(dir, 'queue.mjs');
writeFileSync(
  queueFile,
  `export default function (rft) {
  rft.register('reward', 'busy', (task, ms) => { const end = Date.now() + Number(ms); while (Date.now() < end) {} return 1; });
  rft.register('reward', 'wait', (task, ms) => new Promise((r) => setTimeout(() => r(2), Number(ms))));
  rft.register('reward', 'stray', () => { setTimeout(() => { for (;;) {} }, 0); return 3; });
  rft.register('reward', 'late_loop', async (task, ms) => { await new Promise((r) => setTimeout(r, Number(ms))); for (;;) {} });
}
`,
);

test('a call queued behind a synchronous one has its whole limit from when its thread takes it up', async () => {
  const host = new UserCodeHost(queueFile, 2000);
  try {
    await host.start();
    // The first blocks the thread for 3/4 of its limit; the second, queued behind it, needs half of
    // its own: it ends 1.25 limits after it was posted, well within one limit of its start.
    const [busy, wait] = await Promise.allSettled([
      host.callReward('busy', task('a'), '1500'),
      host.callReward('wait', task('b'), '1000'),
    ]);
    assert.deepEqual(busy, { status: 'fulfilled', value: 1 });
    assert.deepEqual(wait, { status: 'fulfilled', value: 2 }, 'the queued call is not charged for its wait');
    assert.equal(host.threads, 1, 'nothing was stopped');
  } finally {
    host.close();
  }
});

test('a call that started beside one that then loops is starved by it, not failed: it runs again alone', async () => {
  const host = new UserCodeHost(queueFile, 500);
  try {
    await host.start();
    // Both start at once (the first awaits before it loops); the second's limit ends while the
    // first's thread is being pinged, and it waits for that check instead of being failed with it.
    const [loop, wait] = await Promise.allSettled([
      host.callReward('late_loop', task('a'), '10'),
      host.callReward('wait', task('b'), '100'),
    ]);
    assert.equal(loop.status, 'rejected');
    assert.match((loop as PromiseRejectedResult).reason.message, /stopped answering \(a synchronous loop\?\)/);
    assert.deepEqual(wait, { status: 'fulfilled', value: 2 });
  } finally {
    host.close();
  }
});

test('a thread that takes up no call, with none running (a loop left in a timer), is stopped; the waiting call runs again alone', async () => {
  const host = new UserCodeHost(queueFile, 500);
  try {
    await host.start();
    assert.equal(await host.callReward('stray', task('a'), ''), 3);
    // Let the left loop start (a timer of 0 ms) before the next call is posted.
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(
      await host.callReward('wait', task('b'), '10'),
      2,
      'the call waiting on the blocked thread is run again',
    );
    assert.equal(await host.callReward('wait', task('c'), '10'), 2, 'and the next one in a fresh thread');
    assert.equal(host.threads, 2);
  } finally {
    host.close();
  }
});

test('workflow.code_timeout_seconds bounds the code of workflow.file: refused at its path without a file', async () => {
  const { validateRunConfig } = await import('../../backend/core/config.js');
  const { config, issues } = validateRunConfig({ workflow: { name: 'single_turn', code_timeout_seconds: 5 } });
  assert.equal(config, undefined);
  assert.ok(
    issues.some((i) => i.path === 'workflow.code_timeout_seconds' && /set file/.test(i.message)),
    JSON.stringify(issues),
  );
  const withFile = validateRunConfig({ workflow: { name: 'single_turn', file: './x.mjs', code_timeout_seconds: 5 } });
  assert.ok(!withFile.issues.some((i) => i.path.startsWith('workflow')), JSON.stringify(withFile.issues));
});
