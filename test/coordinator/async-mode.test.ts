// synchronizer.schedule async in the checkpoint placement (explorer and trainer processes): the explorer
// never waits for weights; it loads the newest published checkpoint before each step, and explore
// step t does not start while t - (newest published version) > buffer.max_staleness (rows made
// further ahead would go stale before the trainer reached them): it waits for the trainer there,
// counted as explorer_backpressure, not as explorer_idle (waiting for weights). An exploring stage's
// batch follows the explore step (setup/trainer.ts stageBatchSize), so one explore step feeds one trainer
// step and the lead never exceeds the bound; the one exception, a step past it for a trainer left
// without a batch (`starved`), is a safety net tested in trainer-starved.test.ts and
// explorer-loop-lead.test.ts. The trainer's consumption records show every trained experience within
// buffer.max_staleness, none twice; a run stopped mid-MIX resumes and completes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { checkDistributedConfig } from '../../backend/coordinator/distributed/setup.js';
import { checkSyncConfig, requiredVersion, syncOffset } from '../../backend/coordinator/sync-plan.js';
import { tinyConfig, tempWorkspace } from './tiny-config.js';
import { checkConsumption, records } from './consumption-check.js';

const STALE = 2;
/** An explore step makes tasksPerStep x 2 rows, the usual share of the MIX batch. */
const asyncCfg = (mixSteps: number, tasksPerStep = 1) =>
  tinyConfig({ sync_offset: 0 }, mixSteps, {
    explorer: {
      tasks_per_step: tasksPerStep,
      repeat_times: 2,
      sampling: { max_new_tokens: 4 },
      eval_sampling: { max_new_tokens: 4 },
    },
    buffer: { storage: 'sqlite', max_staleness: STALE },
    placement: 'checkpoint',
    synchronizer: { schedule: 'async' },
  });

/** The explorer's MIX records: no step past the bound; never waiting for weights, the bound's wait counted apart. */
function checkLead(runDir: string): { ahead: number; starved: number; backpressure: number } {
  const m = records(runDir).filter((r) => r.stage === 'mix' && r.component === 'explorer');
  const explore = m.filter((r) => r.kind === 'explore');
  for (const r of explore) {
    assert.ok(
      (r.ahead as number) <= STALE,
      `step ${r.step} explored ${r.ahead} ahead of its weights (bound ${STALE})${r.starved ? ', starved' : ''}`,
    );
  }
  const states = m.filter((r) => r.kind === 'state');
  assert.ok(states.length > 0);
  for (const r of states) {
    assert.equal(typeof r.explorer_backpressure, 'number');
    assert.ok((r.explorer_idle as number) < 0.01, `explorer_idle ${r.explorer_idle}: async waited for weights`);
    assert.ok((r.explorer_backpressure_s as number) <= (r.explorer_waiting_s as number) + 1e-6);
  }
  return {
    ahead: Math.max(...explore.map((r) => r.ahead as number)),
    starved: explore.filter((r) => r.starved === true).length,
    backpressure: states.at(-1)!.explorer_backpressure as number,
  };
}

test('async run: the explorer runs ahead of its weights, never more than max_staleness steps, every trained experience within max_staleness, the run completes', async () => {
  const ws = tempWorkspace();
  const runId = 'async1';
  try {
    const cfg = asyncCfg(8);
    assert.equal(syncOffset(cfg), Infinity);
    const s = await runJob({ config: cfg, workspace: ws, runId });
    assert.equal(s.trainer_steps, 2 + 8);
    assert.ok(s.final_accuracy !== null && s.final_accuracy >= 0 && s.final_accuracy <= 1);
    const versions = await checkConsumption(s.run_dir, runId, 2, s.trainer_steps, STALE, 4); // one explore step's 2 or 4 rows
    assert.ok(versions.size >= 3, `trained on experiences of several versions: ${[...versions]}`);
    const lead = checkLead(s.run_dir);
    const explore = records(s.run_dir).filter((m) => m.kind === 'explore');
    console.log(
      `async (1 task per explore step): ahead up to ${lead.ahead}, ${lead.starved} starved steps, ${explore.length} explore steps, backpressure ${lead.backpressure.toFixed(3)}`,
    );
    assert.ok(lead.ahead >= 1, 'the explorer never ran ahead of its weights');
    assert.ok(explore.length > 8, `${explore.length} explore steps for 8 MIX trainer steps`);
    const states = records(s.run_dir).filter((m) => m.kind === 'state');
    assert.ok(states.some((m) => m.component === 'trainer' && typeof m.trainer_idle === 'number'));
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('async run (2 tasks per explore step) stopped mid-MIX resumes and completes, the explorer never more than max_staleness steps ahead', async () => {
  const ws = tempWorkspace();
  const runId = 'async2';
  const MIX = 10;
  try {
    const ac = new AbortController();
    const runDir = join(ws, '.rft', 'runs', runId);
    const watcher = setInterval(() => {
      const f = join(runDir, 'metrics.jsonl');
      if (!existsSync(f)) return;
      const trained = readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"kind":"train"') && l.includes('"stage":"mix"')).length;
      if (trained >= 4) ac.abort();
    }, 20);
    const first = await runJob({ config: asyncCfg(MIX, 2), workspace: ws, runId, signal: ac.signal }).finally(() =>
      clearInterval(watcher),
    );
    assert.ok(first.trainer_steps < 2 + MIX, `stopped early (${first.trainer_steps} steps)`);
    const done = await runJob({ resume: runId, workspace: ws });
    assert.equal(done.trainer_steps, 2 + MIX);
    const store = await openStore(join(runDir, 'buffer.db'));
    try {
      assert.equal(await store.lastConsumedStep('trainer', runId), 2 + MIX - 1);
    } finally {
      await store.close();
    }
    await checkConsumption(runDir, runId, 2, 2 + MIX, STALE, 4);
    const lead = checkLead(runDir);
    const explore = records(runDir).filter((m) => m.kind === 'explore' && m.stage === 'mix');
    console.log(
      `async (2 tasks per explore step, stopped and resumed): ahead up to ${lead.ahead}, ${explore.length} explore steps for ${MIX} trainer steps, backpressure ${lead.backpressure.toFixed(3)}`,
    );
    // The explorer stops when the trainer does: at most the bound's steps past the last trained one (plus the step in flight).
    assert.ok(
      Math.max(...explore.map((m) => m.step as number)) <= 2 + MIX - 1 + STALE + 1,
      `explored up to step ${Math.max(...explore.map((m) => m.step as number))}`,
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('synchronizer.schedule: named schedules set sync_offset, conflicts are errors naming the field', () => {
  const base = {
    taskset: { builtin: 'reverse' },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    stages: [{ name: 'a', algorithm: { name: 'sft' }, steps: 1 }],
  };
  const parse = (synchronizer: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    validateRunConfig({ ...base, synchronizer, ...extra });
  assert.equal(parse({ schedule: 'one_step_off' }).config?.synchronizer.sync_offset, 1);
  assert.equal(parse({ schedule: 'sync' }).config?.synchronizer.sync_offset, 0);
  // Without a schedule the offset is the knob (the schedule is not derived: a parsed config given a new sync_offset stays valid).
  assert.equal(parse({ sync_offset: 3 }).config?.synchronizer.schedule, undefined);
  assert.equal(parse({}).config?.synchronizer.sync_offset, 0);
  const conflict = parse({ schedule: 'sync', sync_offset: 1 }).issues;
  assert.equal(conflict[0]?.path, 'synchronizer.sync_offset');
  assert.match(conflict[0]!.message, /contradicts synchronizer.schedule sync/);
  assert.equal(parse({ schedule: 'async', sync_offset: 2 }).issues[0]?.path, 'synchronizer.sync_offset');
  // Every schedule runs with placement memory (test/coordinator/async-memory.test.ts).
  assert.deepEqual(parse({ schedule: 'async' }, { placement: 'memory' }).issues, []);
  assert.equal(parse({ schedule: 'bogus' }).issues[0]?.path, 'synchronizer.schedule');
  // The name it had before (synchronizer.mode) still loads, with a warning naming the new one; both at once is an error.
  const old = parse({ mode: 'one_step_off' });
  assert.equal(old.config?.synchronizer.sync_offset, 1);
  assert.equal(old.config?.synchronizer.schedule, 'one_step_off');
  assert.match(
    old.warnings.map((w) => `${w.path}: ${w.message}`).join('\n'),
    /synchronizer\.mode: renamed 'synchronizer\.schedule'/,
  );
  assert.equal(parse({ mode: 'async', schedule: 'async' }).issues[0]?.path, 'synchronizer.mode');
  // A run folder's config.yaml (defaults filled in) reads back the same.
  const back = parse({ schedule: 'async' }).config!;
  assert.deepEqual(validateRunConfig(JSON.parse(JSON.stringify(back))).config?.synchronizer, back.synchronizer);
  // Async: a step needs only the stage's start checkpoint; no staleness/offset conflict to report.
  const cfg = asyncCfg(2);
  assert.equal(requiredVersion(50, { interval: 1, offset: syncOffset(cfg), stageStartVersion: 2 }), 2);
  assert.equal(checkSyncConfig(cfg), null);
  // Distributed runs take async too (test/coordinator/async-distributed.test.ts).
  assert.equal(checkDistributedConfig(cfg), null);
});
