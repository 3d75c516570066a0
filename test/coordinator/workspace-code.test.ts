// workflow.file: a reward from a file of the user's workspace, loaded (with trust only) into the
// explorer of the in-process (`memory`) and child-process (`checkpoint`) strategies. The rewards the
// experiences carry are the file's; a reward that throws gives counted infra failures naming the
// file and line (never an ok 0); a file that does not load is an error naming the file and line.
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { TRUST_ENV, trustedFromEnv } from '../../backend/coordinator/workspace-code.js';
import { cliNodeArgs } from '../../backend/core/package-root.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import { tempWorkspace, tinyConfig, writeConfig } from './tiny-config.js';

// One stage of GRPO on the built-in reverse task: 2 tasks x 2 samples a step, 2 steps.
function config(dir: string, method: 'memory' | 'checkpoint', reward: string, file: string): string {
  const cfg = tinyConfig({ sync_offset: 0 }, 2, {
    experts: undefined,
    stages: [{ name: 'main', algorithm: { name: 'grpo' }, steps: 2 }],
    placement: method,
    synchronizer: { sync_interval: 1, sync_offset: 0 },
    workflow: { name: 'single_turn', reward, file },
  });
  return writeConfig(dir, cfg);
}

const lengthReward = (name: string) => `export default function (rft) {
  rft.register('reward', '${name}', (task, response) => ({ reward: response.length / 10 + 0.01 }));
}
`;

async function usualRows(runDir: string, runId: string) {
  const store = await openStore(join(runDir, 'buffer.db'));
  try {
    return await store.list({ runId, source: 'usual', limit: 10_000 });
  } finally {
    await store.close();
  }
}

for (const method of ['memory', 'checkpoint'] as const) {
  test(`workflow.file: the custom reward scores every rollout (synchronizer ${method})`, async () => {
    assert.equal(trustedFromEnv(), false, `${TRUST_ENV} must not be set for this test`);
    const ws = tempWorkspace();
    try {
      const name = `len_${method}`;
      writeFileSync(join(ws, 'my-reward.mjs'), lengthReward(name));
      const file = config(ws, method, name, './my-reward.mjs');
      const cfg = loadRunConfig(file);
      assert.equal(cfg.workflow.file, join(ws, 'my-reward.mjs'), 'workflow.file is relative to the config file');
      const s = await runJob({
        config: cfg,
        configPath: file,
        workspace: ws,
        runId: `wc-${method}`,
        trustWorkspaceCode: true,
      });
      assert.equal(s.trainer_steps, 2);
      const rows = await usualRows(s.run_dir, `wc-${method}`);
      assert.ok(rows.length >= 2 * 2 * 2, `rollouts of 2 steps, got ${rows.length}`);
      for (const e of rows) {
        assert.equal(e.status === 'infra_failure', false, `no infra failure: ${e.statusReason}`);
        assert.equal(
          e.reward,
          e.responseText.length / 10 + 0.01,
          `reward of ${JSON.stringify(e.responseText)} is the file's`,
        );
      }
      // Not the built-in exact_match: some reward is fractional.
      assert.ok(rows.some((e) => e.reward % 1 !== 0));
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
}

test('workflow.file: a custom workflow runs in the explorer (its experiences, scored by the custom reward)', async () => {
  const ws = tempWorkspace();
  try {
    // The workflow samples from ctx.model and marks its experiences (promptText) so the test can tell them apart.
    writeFileSync(
      join(ws, 'wf.mjs'),
      `export default function (rft) {
  rft.register('reward', 'len_wf', (task, response) => response.length / 10 + 0.01);
  rft.register('workflow', 'tagged', async (tasks, ctx) => {
    const prompts = [], owners = [];
    for (const t of tasks) for (let r = 0; r < ctx.repeatTimes; r++) { prompts.push(ctx.model.tokenizer.encode(t.prompt)); owners.push(t); }
    const gens = await ctx.model.generate(prompts, { ...ctx.sampling, seed: ctx.seed });
    return Promise.all(gens.map(async (g, i) => {
      const t = owners[i], r = await ctx.reward(t, g.text);
      return { id: ctx.runId + '-' + ctx.split + '-' + ctx.step + '-' + i + '-' + Math.random(), taskId: t.id, groupId: ctx.runId + ':' + ctx.split + ':' + ctx.step + ':' + t.id,
        runId: ctx.runId, source: 'usual', promptTokens: prompts[i], promptText: 'tagged:' + t.prompt, responseTokens: g.tokens, responseText: g.text,
        actionMask: g.tokens.map(() => 1), logprobs: g.logprobs, modelVersion: ctx.model.version, reward: r.reward,
        status: r.status === 'ok' ? 'ok' : 'infra_failure', useCount: 0, createdAt: Date.now(), split: ctx.split };
    }));
  });
}
`,
    );
    const cfg = tinyConfig({ sync_offset: 0 }, 2, {
      experts: undefined,
      stages: [{ name: 'main', algorithm: { name: 'grpo' }, steps: 2 }],
      placement: 'memory',
      workflow: { name: 'tagged', reward: 'len_wf', file: './wf.mjs' },
    });
    const file = writeConfig(ws, cfg);
    const s = await runJob({
      config: loadRunConfig(file),
      configPath: file,
      workspace: ws,
      runId: 'wf',
      trustWorkspaceCode: true,
    });
    assert.equal(s.trainer_steps, 2);
    const rows = await usualRows(s.run_dir, 'wf');
    assert.ok(rows.length >= 2 * 2 * 2, `rollouts of 2 steps, got ${rows.length}`);
    for (const e of rows) {
      assert.ok(e.promptText.startsWith('tagged:'), `made by the custom workflow: ${e.promptText}`);
      assert.equal(e.reward, e.responseText.length / 10 + 0.01);
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('workflow.file without trust: refused, naming the field and the flag; no run is created', async () => {
  const ws = tempWorkspace();
  try {
    writeFileSync(join(ws, 'r.mjs'), lengthReward('len_untrusted'));
    const file = config(ws, 'memory', 'len_untrusted', './r.mjs');
    const cfg = loadRunConfig(file);
    await assert.rejects(runJob({ config: cfg, configPath: file, workspace: ws, runId: 'untrusted' }), (e: Error) => {
      assert.match(e.message, /field 'workflow\.file'/);
      assert.match(e.message, /--trust-workspace-code/);
      assert.match(e.message, /RFT_TRUST_WORKSPACE_CODE=1/);
      return true;
    });
    assert.equal((await (await RunRegistry.open(ws)).list()).length, 0, 'nothing registered');
    // The CLI: refused without the flag (exit code and message), with the flag it passes the trust check.
    const env = { ...process.env, [TRUST_ENV]: '' };
    const cli = spawnSync(process.execPath, [...cliNodeArgs(), 'run', file, '--workspace', ws, '--quiet'], {
      encoding: 'utf8',
      env,
      timeout: 120_000,
    });
    assert.notEqual(cli.status, 0);
    assert.match(cli.stderr, /field 'workflow\.file'.*--trust-workspace-code/s);
    assert.equal((await (await RunRegistry.open(ws)).list()).length, 0, 'nothing registered by the CLI either');
    assert.equal(trustedFromEnv({ [TRUST_ENV]: '1' }), true);
    assert.equal(trustedFromEnv({ [TRUST_ENV]: 'yes' }), false);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('a custom reward that throws: infra failures naming the file and line, counted; the run goes on', async () => {
  const ws = tempWorkspace();
  try {
    const code = join(ws, 'flaky.mjs');
    // Throws on odd-length answers (line 3), scores the others.
    writeFileSync(
      code,
      `export default function (rft) {
  rft.register('reward', 'flaky', (task, response) => {
    if (response.length % 2 === 1) throw new Error('odd answer');
    return 0.25;
  });
}
`,
    );
    const file = config(ws, 'memory', 'flaky', './flaky.mjs');
    const s = await runJob({
      config: loadRunConfig(file),
      configPath: file,
      workspace: ws,
      runId: 'flaky',
      trustWorkspaceCode: true,
    });
    assert.equal(s.trainer_steps, 2, 'the run finished its steps');
    const rows = await usualRows(s.run_dir, 'flaky');
    const failed = rows.filter((e) => e.status === 'infra_failure');
    assert.ok(failed.length > 0, 'some answers had odd length');
    for (const e of rows) {
      if (e.responseText.length % 2 === 1) {
        assert.equal(e.status, 'infra_failure', 'a throwing reward is never an ok 0');
        assert.ok(e.statusReason?.includes(`${code}:3`), `reason names file:line: ${e.statusReason}`);
        assert.match(e.statusReason!, /odd answer/);
      } else if (e.status === 'ok') assert.equal(e.reward, 0.25);
    }
    // Counted in the explore metrics.
    const counted = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"kind":"explore"'))
      .reduce((n, l) => n + Number((JSON.parse(l) as { infra_failure?: number }).infra_failure ?? 0), 0);
    assert.equal(counted, failed.length);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('a file that does not load: the error names the file and line (syntax error, throwing default export, no default export)', async () => {
  const ws = tempWorkspace();
  try {
    const cases: [string, string, RegExp][] = [
      [
        'syntax.mjs',
        `export default function (rft) {\n  rft.register('reward', 'x', (t, r) => {\n    return 1 +;\n  });\n}\n`,
        /syntax\.mjs:3: could not load: Unexpected token/,
      ],
      [
        'throws.mjs',
        `export default function (rft) {\n  const n = 1;\n  throw new Error('setup failed');\n}\n`,
        /throws\.mjs:3: field 'default': the default export threw: setup failed/,
      ],
      [
        'nodefault.mjs',
        `export function reward() { return 1; }\n`,
        /nodefault\.mjs: field 'default': the default export must be a function/,
      ],
    ];
    for (const [name, text, want] of cases) {
      writeFileSync(join(ws, name), text);
      const file = config(ws, 'memory', 'x', `./${name}`);
      await assert.rejects(
        runJob({
          config: loadRunConfig(file),
          configPath: file,
          workspace: ws,
          runId: `bad-${name}`,
          trustWorkspaceCode: true,
        }),
        (e: Error) => {
          assert.match(e.message, want);
          assert.ok(e.message.includes(join(ws, name)), e.message);
          return true;
        },
      );
    }
    // A file that is not there: told when the config is read (rft run --check), before any trust question.
    const missing = config(ws, 'memory', 'x', './nowhere.mjs');
    assert.throws(() => loadRunConfig(missing), /field 'workflow\.file': no file '.*nowhere\.mjs'/);
    // A file that loads but does not register the name the config asks for.
    writeFileSync(join(ws, 'other.mjs'), lengthReward('len_other'));
    const file = config(ws, 'memory', 'not_there', './other.mjs');
    await assert.rejects(
      runJob({
        config: loadRunConfig(file),
        configPath: file,
        workspace: ws,
        runId: 'unknown',
        trustWorkspaceCode: true,
      }),
      /field 'workflow\.reward': unknown reward function 'not_there' \(not built in, and .*other\.mjs does not register it\)/,
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('workflow.file in a distributed run (PostgreSQL): refused without RFT_TRUST_WORKSPACE_CODE; with it the explorer scores with the file', async (t) => {
  const pg = startPg();
  if ('skip' in pg) return t.skip(pg.skip);
  const ws = tempWorkspace();
  try {
    writeFileSync(join(ws, 'dist.mjs'), lengthReward('len_dist'));
    const cfg = loadRunConfig(config(ws, 'checkpoint', 'len_dist', './dist.mjs'));
    const url = pgSchemaUrl(pg.url);
    await assert.rejects(
      createDistributedRun(cfg, url, 'dist', join(ws, 'weights')),
      /field 'workflow\.file'.*RFT_TRUST_WORKSPACE_CODE=1/s,
    );
    // The distributed commands take their trust from the environment (each worker host decides).
    process.env[TRUST_ENV] = '1';
    try {
      await createDistributedRun(cfg, url, 'dist', join(ws, 'weights'));
      const stop = new AbortController();
      const explorer = distributedExplorer({ url, runId: 'dist', signal: stop.signal, leaseMs: 20_000 });
      try {
        const r = await distributedTrainer({ url, runId: 'dist' });
        assert.equal(r.done, true);
      } finally {
        stop.abort();
        await explorer;
      }
    } finally {
      delete process.env[TRUST_ENV];
    }
    const store = await openStore(url);
    try {
      const rows = await store.list({ runId: 'dist', source: 'usual', limit: 10_000 });
      assert.ok(rows.length >= 2 * 2 * 2, `rollouts of 2 steps, got ${rows.length}`);
      for (const e of rows)
        assert.equal(
          e.reward,
          e.responseText.length / 10 + 0.01,
          `reward of ${JSON.stringify(e.responseText)} is the file's`,
        );
    } finally {
      await store.close();
    }
  } finally {
    pg.stop();
    rmSync(ws, { recursive: true, force: true });
  }
});

test('a custom reward that calls process.exit(0) or loops for ever costs only its own rollouts, never the run: infra failures with the reason, counted; the run finishes', async () => {
  const ws = tempWorkspace();
  try {
    const code = join(ws, 'hostile.mjs');
    // Before: the first process.exit(0) ended `rft run` with exit 0 and no output, the run left `running`; a for(;;) hung it.
    writeFileSync(
      code,
      `export default function (rft) {
  rft.register('reward', 'hostile', (task, response) => {
    if (response.length % 4 === 0) process.exit(0);
    if (response.length % 4 === 1) for (;;) {}
    return 0.25;
  });
}
`,
    );
    const raw = tinyConfig({ sync_offset: 0 }, 2, {
      experts: undefined,
      stages: [{ name: 'main', algorithm: { name: 'grpo' }, steps: 2 }],
      placement: 'memory',
      synchronizer: { sync_interval: 1, sync_offset: 0 },
      workflow: { name: 'single_turn', reward: 'hostile', file: './hostile.mjs', code_timeout_seconds: 0.5 },
    });
    const file = writeConfig(ws, raw);
    const s = await runJob({
      config: loadRunConfig(file),
      configPath: file,
      workspace: ws,
      runId: 'hostile',
      trustWorkspaceCode: true,
    });
    assert.equal(s.trainer_steps, 2, 'the run finished its steps');
    const run = (await (await RunRegistry.open(ws)).list()).find((r) => r.id === 'hostile');
    assert.equal(run?.status, 'completed', 'the run is marked completed, not left running');
    const rows = await usualRows(s.run_dir, 'hostile');
    const failed = rows.filter((e) => e.status === 'infra_failure');
    for (const e of rows) {
      const n = e.responseText.length % 4;
      if (n === 0 || n === 1)
        assert.equal(e.status, 'infra_failure', `length ${e.responseText.length} is never an ok reward`);
      if (e.status === 'infra_failure')
        assert.match(
          e.statusReason!,
          /^custom reward 'hostile' (its thread ended \(process\.exit\(0\) in .*hostile\.mjs\)|did not return within 0\.5 s \(workflow\.code_timeout_seconds\)|its thread was stopped)/,
          e.statusReason,
        );
      else assert.equal(e.reward, 0.25);
      // The calls that shared a thread with one that exited or looped were run again alone: scored.
      if (n === 2 || n === 3)
        assert.deepEqual([e.status, e.reward], ['ok', 0.25], `length ${e.responseText.length}: ${e.statusReason}`);
    }
    assert.ok(
      rows.some((e) => /process\.exit\(0\)/.test(e.statusReason ?? '')),
      'some answer had length 0 mod 4',
    );
    const counted = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"kind":"explore"'))
      .reduce((n, l) => n + Number((JSON.parse(l) as { infra_failure?: number }).infra_failure ?? 0), 0);
    assert.equal(counted, failed.length, 'every failed rollout is counted');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
