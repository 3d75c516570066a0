// synchronizer.schedule async and one_step_off with method memory (one process): the explorer runs in a
// rollout worker thread beside the trainer (placement/memory-explorer.ts, on the explorer driver). Async: explore step t
// starts while t - (trainer version) <= max_staleness, with the newest weights, never waiting for a
// version (explorer_idle 0 in every record); one_step_off: step t waits for v(t - 1). Every trained
// experience is within max_staleness (the consumption records), and a run stopped mid-MIX resumes
// and completes with every step trained once and no usual experience trained twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { requiredVersion } from '../../backend/coordinator/sync-plan.js';
import { leadWait } from '../../backend/explorer/explorer-loop.js';
import { tinyConfig, tempWorkspace } from './tiny-config.js';
import { checkConsumption, records } from './consumption-check.js';

const STALE = 2;
const MIX = 10;
const memCfg = (schedule: 'async' | 'one_step_off') =>
  tinyConfig({ sync_offset: 0 }, MIX, {
    buffer: { storage: 'sqlite', max_staleness: STALE },
    placement: 'memory',
    synchronizer: { schedule },
  });

test('memory async: the explorer overlaps the trainer, at most max_staleness steps ahead, never waiting for weights', async () => {
  const ws = tempWorkspace();
  try {
    const s = await runJob({ config: memCfg('async'), workspace: ws, runId: 'ma' });
    assert.equal(s.trainer_steps, 2 + MIX);
    const m = records(s.run_dir).filter((r) => r.stage === 'mix');
    const explore = m.filter((r) => r.kind === 'explore');
    const aheads = explore.map((r) => r.ahead as number);
    assert.ok(explore.length >= MIX, `${explore.length} explore steps for ${MIX} trainer steps`);
    assert.ok(Math.max(...aheads) <= STALE, `the explorer ran ${Math.max(...aheads)} steps ahead (bound ${STALE})`);
    // Overlap: some step was explored while the trainer had not reached it (in lockstep ahead is always 0).
    assert.ok(Math.max(...aheads) >= 1, `explorer never ran ahead: ${aheads}`);
    // The explorer always used the newest weights: each step's rows are of the trainer's version when it started.
    for (const r of explore)
      assert.equal(
        (r.step as number) - (r.ahead as number),
        r.model_version,
        `step ${r.step}: explored with v${r.model_version}`,
      );
    const states = m.filter((r) => r.kind === 'state' && r.component === 'explorer');
    assert.ok(states.length >= MIX);
    for (const r of states) {
      assert.equal(r.explorer_idle, 0, 'async: the explorer never waits for weights');
      assert.equal(typeof r.explorer_backpressure, 'number');
    }
    const trainerStates = m.filter((r) => r.kind === 'state' && r.component === 'trainer');
    assert.ok(trainerStates.every((r) => r.explorer_idle === 0 && typeof r.explorer_backpressure === 'number'));
    const versions = await checkConsumption(s.run_dir, 'ma', 2, s.trainer_steps, STALE);
    assert.ok(versions.size >= 3, `trained on several versions: ${[...versions]}`);
    console.log(
      `memory async: ahead ${[...new Set(aheads)].sort()}, backpressure ${(states.at(-1)!.explorer_backpressure as number).toFixed(3)}, trained versions ${[...versions].sort((a, b) => a - b)}`,
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('memory one_step_off: explore step t waits for v(t-1); rows at most one version old', async () => {
  const ws = tempWorkspace();
  try {
    const cfg = memCfg('one_step_off');
    cfg.buffer.max_staleness = 1;
    const s = await runJob({ config: cfg, workspace: ws, runId: 'mo' });
    assert.equal(s.trainer_steps, 2 + MIX);
    const explore = records(s.run_dir).filter((r) => r.stage === 'mix' && r.kind === 'explore');
    for (const r of explore) {
      assert.ok((r.ahead as number) <= 1, `step ${r.step} explored ${r.ahead} ahead`);
      assert.ok(
        (r.model_version as number) >= (r.step as number) - 1,
        `step ${r.step} explored with v${r.model_version}`,
      );
    }
    assert.ok(
      explore.some((r) => r.ahead === 1),
      'rollout overlapped training (a step explored one ahead)',
    );
    await checkConsumption(s.run_dir, 'mo', 2, s.trainer_steps, 1);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('memory async: a run stopped mid-MIX resumes and completes, every step trained once, nothing twice, all within the bound', async () => {
  const ws = tempWorkspace();
  try {
    const ac = new AbortController();
    const runDir = join(ws, '.rft', 'runs', 'mr');
    const watcher = setInterval(() => {
      const f = join(runDir, 'metrics.jsonl');
      if (!existsSync(f)) return;
      const trained = readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"kind":"train"') && l.includes('"stage":"mix"')).length;
      if (trained >= 4) ac.abort();
    }, 20);
    const first = await runJob({
      config: memCfg('async'),
      workspace: ws,
      runId: 'mr',
      signal: ac.signal,
      checkpointEvery: 3,
    }).finally(() => clearInterval(watcher));
    assert.ok(first.trainer_steps < 2 + MIX, `stopped early (${first.trainer_steps} steps)`);
    const done = await runJob({ resume: 'mr', workspace: ws, checkpointEvery: 3 });
    assert.equal(done.trainer_steps, 2 + MIX);
    const store = await openStore(join(runDir, 'buffer.db'));
    try {
      assert.equal(await store.lastConsumedStep('trainer', 'mr'), 2 + MIX - 1);
    } finally {
      await store.close();
    }
    await checkConsumption(runDir, 'mr', 2, 2 + MIX, STALE);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('the overlap gate: offset k waits for weights v(t-k); async waits for buffer room past max_staleness', () => {
  // The plan placement/memory-explorer.ts gives the explorer driver: the trainer publishes every step.
  const plan = (offset: number, stageStartVersion: number) => ({ interval: 1, offset, stageStartVersion });
  assert.equal(requiredVersion(5, plan(1, 0)), 4); // trainer at v3: step 5 waits; at v4 it starts
  // A stage's first steps need only its start version.
  assert.equal(requiredVersion(10, plan(1, 10)), 10);
  // Async: no version is required, only the lead bounds a step.
  assert.equal(requiredVersion(7, plan(Infinity, 0)), 0);
  assert.equal(leadWait(7, 4, 2), 'bound');
  assert.equal(leadWait(6, 4, 2), null);
  // Every schedule is valid with placement memory.
  for (const schedule of ['sync', 'one_step_off', 'async'])
    assert.deepEqual(
      validateRunConfig({
        taskset: { builtin: 'reverse' },
        workflow: { name: 'single_turn', reward: 'exact_match' },
        placement: 'memory',
        synchronizer: { schedule },
      }).issues,
      [],
    );
});
