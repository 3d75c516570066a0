// synchronizer.mode async: the explorer never waits for weights. The run below could not finish in
// sync or one-step-off: each explore step makes 2 experiences and a MIX step takes 4 usual ones, so
// trainer step t needs explore steps up to ~2t, which in sync_offset k mode would wait for v(2t - k)
// forever. It finishes because the explorer goes on with the newest weights it has; the trainer's
// consumption records show every trained experience within buffer.max_staleness.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { checkDistributedConfig } from '../../backend/coordinator/distributed/setup.js';
import { checkSyncConfig, requiredVersion, syncOffset } from '../../backend/coordinator/sync-plan.js';
import { tinyConfig, tempWorkspace } from './tiny-config.js';

const STALE = 2;
const asyncCfg = (mixSteps: number) =>
  tinyConfig({ sync_offset: 0 }, mixSteps, {
    explorer: { tasks_per_step: 1, repeat_times: 2, sampling: { max_new_tokens: 4 }, eval_sampling: { max_new_tokens: 4 } },
    buffer: { storage: 'sqlite', max_staleness: STALE },
    synchronizer: { method: 'checkpoint', mode: 'async' },
  });

test('async run: the explorer runs ahead of the trainer, every trained experience is within max_staleness, the run completes', async () => {
  const ws = tempWorkspace();
  const runId = 'async1';
  try {
    const cfg = asyncCfg(8);
    assert.equal(syncOffset(cfg), Infinity);
    const s = await runJob({ config: cfg, workspace: ws, runId });
    assert.equal(s.trainer_steps, 2 + 8);
    assert.ok(s.final_accuracy >= 0 && s.final_accuracy <= 1);
    const store = await openStore(join(s.run_dir, 'buffer.db'));
    const versions = new Set<number>();
    try {
      for (let t = 2; t < s.trainer_steps; t++) {
        const exps = (await store.getMany(await store.consumed('trainer', t, runId))).filter((e) => e.source === 'usual');
        assert.ok(exps.length >= 1 && exps.length <= 4, `step ${t}: ${exps.length} usual experiences (a MIX batch of 8 with expert_ratio 0.5 takes up to 4)`);
        for (const e of exps) {
          assert.ok(e.modelVersion <= t, `step ${t}: experience from the future v${e.modelVersion}`);
          assert.ok(e.modelVersion >= t - STALE, `step ${t}: v${e.modelVersion} is more than ${STALE} versions old`);
          versions.add(e.modelVersion);
        }
      }
    } finally {
      await store.close();
    }
    assert.ok(versions.size >= 3, `trained on experiences of several versions: ${[...versions]}`);
    const metrics = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const explore = metrics.filter((m) => m.kind === 'explore');
    // Explore steps are numbered by the trainer step they feed: ahead = step - the version that made it.
    const ahead = Math.max(...explore.map((m) => m.ahead as number));
    console.log(`async: explorer ahead by up to ${ahead} versions, ${explore.length} explore steps, trained versions ${[...versions].sort((a, b) => a - b)}`);
    assert.ok(ahead >= 2, `the explorer ran ahead of the trainer by at most ${ahead} versions`);
    assert.ok(explore.length > 8, `${explore.length} explore steps for 8 MIX trainer steps`);
    const states = metrics.filter((m) => m.kind === 'state');
    assert.ok(states.some((m) => m.component === 'explorer' && typeof m.explorer_idle === 'number'));
    assert.ok(states.some((m) => m.component === 'trainer' && typeof m.trainer_idle === 'number'));
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('synchronizer.mode: named modes set sync_offset, conflicts are errors naming the field', () => {
  const base = { taskset: { builtin: 'reverse' }, workflow: { name: 'single_turn', reward: 'exact_match' }, stages: [{ name: 'a', algorithm: { name: 'sft' }, steps: 1 }] };
  const parse = (synchronizer: Record<string, unknown>, extra: Record<string, unknown> = {}) => validateRunConfig({ ...base, synchronizer, ...extra });
  assert.equal(parse({ mode: 'one_step_off' }).config?.synchronizer.sync_offset, 1);
  assert.equal(parse({ mode: 'sync' }).config?.synchronizer.sync_offset, 0);
  // Without a mode the offset is the knob (the mode is not derived: a parsed config given a new sync_offset stays valid).
  assert.equal(parse({ sync_offset: 3 }).config?.synchronizer.mode, undefined);
  assert.equal(parse({}).config?.synchronizer.sync_offset, 0);
  const conflict = parse({ mode: 'sync', sync_offset: 1 }).issues;
  assert.equal(conflict[0]?.path, 'synchronizer.sync_offset');
  assert.match(conflict[0]!.message, /contradicts synchronizer.mode sync/);
  assert.equal(parse({ mode: 'async', sync_offset: 2 }).issues[0]?.path, 'synchronizer.sync_offset');
  // Every mode runs with method memory (test/coordinator/async-memory.test.ts).
  assert.deepEqual(parse({ method: 'memory', mode: 'async' }).issues, []);
  assert.equal(parse({ mode: 'bogus' }).issues[0]?.path, 'synchronizer.mode');
  // A run folder's config.yaml (defaults filled in) reads back the same.
  const back = parse({ mode: 'async' }).config!;
  assert.deepEqual(validateRunConfig(JSON.parse(JSON.stringify(back))).config?.synchronizer, back.synchronizer);
  // Async: a step needs only the stage's start checkpoint; no staleness/offset conflict to report.
  const cfg = asyncCfg(2);
  assert.equal(requiredVersion(50, { interval: 1, offset: syncOffset(cfg), stageStartVersion: 2 }), 2);
  assert.equal(checkSyncConfig(cfg), null);
  // Distributed runs take async too (test/coordinator/async-distributed.test.ts).
  assert.equal(checkDistributedConfig(cfg), null);
});
