// `rft coordinator CONFIG --buffer postgres://... --run RUN --weights DIR`: creates a distributed run
// in the database (its config, tasks, expert data, the tokenizer and initial weights as checkpoint v0
// in the weights folder, published by sha256 to the database or the run's object store so a trainer
// on any machine can start from it, and the first jobs), then optionally watches the workers. It holds
// no state of its own: it can run anywhere, be stopped and started again, or not run at all after setup.
import { InputError } from '../../core/errors.js';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { RunConfig } from '../../core/config.js';
import { initEngine } from '../../model/engine.js';
import { runModelParams } from '../../model/run-model.js';
import { saveCheckpoint } from '../../model/checkpoint.js';
import { PostgresStore } from '../../buffer/storage/postgres.js';
import { JobQueue, type WorkerRow } from '../../buffer/queue/job-queue.js';
import { reconnecting, withRetry } from '../../buffer/queue/retry.js';
import { loadTasks } from '../setup/tasks.js';
import { seedRun } from '../setup/run-data.js';
import { initialModel, makeTokenizer, tokenizerTexts } from '../setup/model.js';
import { stagesOf } from '../setup/trainer.js';
import { checkSyncConfig } from '../sync-plan.js';
import { partialRolloutIssues } from '../config-check.js';
import { distributedUnread } from '../../core/config-reads.js';
import { stageExplores } from '../setup/stage-data.js';
import { loadWorkspaceCode } from '../workspace-code.js';
import { jobSync, PLANNED_SELECTORS, stepJobs } from './jobs-plan.js';
import { checksumDir, versionDir } from './weights.js';
import { configDiff } from './config-diff.js';
import { DbWeightsStore } from './weights-db.js';
import type { S3StoreSpec } from './weights-store.js';

/** What a distributed run supports today; anything else is refused up front with the field named. */
export function checkDistributedConfig(cfg: RunConfig): string | null {
  if (cfg.mode === 'explore' || cfg.mode === 'bench')
    return `mode: ${cfg.mode} has no trainer; run it with \`rft run\``;
  // Its explorers lease jobs planned from the taskset; a serve run's tasks are its callers' requests.
  if (cfg.mode === 'serve')
    return 'mode: serve runs with `rft run` and placement: memory or placement: checkpoint; a distributed run (rft coordinator) cannot serve yet';
  // Copied into the local run's buffer at its start (coordinator/train-from.ts); the distributed setup does not.
  if (cfg.buffer.train_from)
    return "buffer.train_from: a distributed run does not copy another run's buffer; import it first (rft buffer export, then rft buffer import into the run's database) or train with `rft run`";
  const stages = stagesOf(cfg);
  for (const [i, s] of stages.entries()) {
    const at = cfg.stages ? `stages[${i}]` : 'trainer';
    // Jobs are planned per trainer step, so every stage but the last is bounded by its steps (the
    // explorers know from a job's step which stage it feeds); the last may end on a wall-clock budget.
    const last = i === stages.length - 1;
    if (!last && s.wall_seconds !== undefined)
      return `${at}.wall_seconds: a distributed run bounds every stage but the last by steps; give steps instead`;
    if (s.steps === undefined && s.wall_seconds === undefined)
      return `${at}.steps: a distributed run needs a number of steps (or, for the last stage, wall_seconds)`;
    if (s.mode === 'explore')
      return `${at}.mode: a distributed stage trains (mode both or train); an explore-only run goes with \`rft run\``;
  }
  // Task synthesis runs in the trainer (after each batch) and grows the list its job plan picks from;
  // a selector that learns from outcomes plans from the list it was made with.
  const synth = Array.isArray(cfg.taskset.pipeline)
    ? cfg.taskset.pipeline.findIndex((s) => s.name === 'synthesize')
    : -1;
  if (synth >= 0 && !PLANNED_SELECTORS.includes(cfg.taskset.selector))
    return `taskset.pipeline[${synth}]: synthesize in a distributed run takes taskset.selector shuffle, sequential or random (not ${cfg.taskset.selector})`;
  // Partial rollouts continue a group in continuation jobs (partial-jobs.ts); what no placement can continue is refused here too.
  const partial = partialRolloutIssues(cfg)[0];
  if (partial) return `${partial.path}: ${partial.message}`;
  // Fields no part of a distributed run reads (rft coordinator names them all, with the file, at load).
  const unread = distributedUnread(cfg)[0];
  if (unread) return `${unread.path}: ${unread.message}`;
  return checkSyncConfig(cfg);
}

export interface CreateResult {
  created: boolean;
  checkpoint: string;
  jobs: number;
  /** The run existed with another config: the fields that differ (the stored config stays the run's). */
  configDiffers?: string[];
}

/**
 * `weightsDir`: where v0 is written on this host. `objectStore`: the run keeps its versions in S3
 * (v0 uploaded from here, `weightsDir` then only a staging folder); without it v0 goes into the
 * database and later versions are served by the trainer.
 */
export async function createDistributedRun(
  cfg: RunConfig,
  url: string,
  runId: string,
  weightsDir: string,
  objectStore?: S3StoreSpec,
): Promise<CreateResult> {
  const bad = checkDistributedConfig(cfg);
  if (bad) throw new InputError(bad);
  // The AWS SDK is loaded only by processes of runs that use S3.
  const object = objectStore ? new (await import('./weights-s3.js')).S3WeightsStore(objectStore) : null;
  await object?.checkCredentials();
  await initEngine({ modelParams: runModelParams(cfg) });
  const raw = await withRetry(() => PostgresStore.open(url), { maxMs: 30_000 });
  const store = reconnecting(raw, { maxMs: 60_000 });
  const q = await withRetry(() => JobQueue.open(url), { maxMs: 30_000 });
  try {
    const existing = await store.latestCheckpoint(runId);
    if (existing) {
      // The run goes on with its stored config; a different one given now is named, never applied silently.
      const stored = await store.getState(runId, 'dist:config');
      const differs = stored === null ? [] : configDiff(stored, JSON.parse(JSON.stringify(cfg)));
      return {
        created: false,
        checkpoint: existing.path,
        jobs: 0,
        ...(differs.length ? { configDiffers: differs } : {}),
      };
    }
    const dir = resolve(weightsDir);
    mkdirSync(dir, { recursive: true });
    await loadWorkspaceCode(cfg); // workflow.file: trusted by RFT_TRUST_WORKSPACE_CODE=1
    const pools = await loadTasks(cfg);
    const tok = makeTokenizer(cfg, tokenizerTexts(pools));
    await seedRun(store, runId, pools, tok);
    await store.setState(runId, 'dist:config', cfg);
    await store.setState(runId, 'dist:weights', object ? null : dir);
    await store.setState(runId, 'dist:weights-store', objectStore ?? null);
    // The held-out set, for the trainer's evaluations at the start and the end (it has no config files).
    await store.setState(runId, 'dist:eval', pools.eval);
    await store.setState(runId, 'dist:eval_set', pools.evalSet);
    const model = initialModel(cfg, tok, [...pools.train, ...pools.eval]);
    const v0 = versionDir(dir, runId, 0);
    await saveCheckpoint(
      model,
      v0,
      { version: 0, step: 0, stage: stagesOf(cfg)[0]!.name, stage_index: 0, stage_step: 0 },
      tok,
    );
    model.dispose();
    // The first steps' jobs, when the first stage explores (a warm-up SFT stage trains on expert data alone).
    const first = stagesOf(cfg)[0]!;
    const plan = {
      tasks: pools.train,
      seed: cfg.seed,
      selector: cfg.taskset.selector,
      tasksPerStep: cfg.explorer.tasks_per_step,
      end: first.steps,
      ...jobSync(cfg, 0),
    };
    let jobs = 0;
    // A selector that learns from outcomes (priority, curriculum) is the trainer's: it queues those jobs itself.
    if (stageExplores(first) && PLANNED_SELECTORS.includes(cfg.taskset.selector))
      for (let t = 0; t <= plan.lead; t++) jobs += await withRetry(() => q.addJobs(runId, stepJobs(plan, t)));
    // Recorded last: a run with a v0 checkpoint is complete (a setup killed before this starts over).
    // v0 travels as every version does, by sha256: to the object store, else into the database.
    const checksum = checksumDir(v0);
    await (object ?? new DbWeightsStore(q.pool)).publish(runId, v0, checksum);
    const path = objectStore
      ? `s3://${objectStore.bucket}/${[objectStore.prefix, runId, checksum].filter(Boolean).join('/')}/`
      : v0;
    await store.addCheckpoint({ runId, version: 0, path, checksum, createdAt: Date.now() });
    return { created: true, checkpoint: path, jobs };
  } finally {
    await q.close();
    await raw.close();
  }
}

export function formatWorkers(rows: WorkerRow[], deadAfterS = 10): string {
  const head = ['worker', 'host', 'role', 'state', 'version', 'done', 'per_s', 'heartbeat'];
  const lines = rows.map((w) => [
    w.id,
    w.host,
    w.role,
    w.ageS > deadAfterS && w.state !== 'stopped' && w.state !== 'done' ? `lost (${w.state})` : w.state,
    w.modelVersion === null ? '-' : `v${w.modelVersion}`,
    String(w.done),
    w.throughput.toFixed(2),
    `${w.ageS.toFixed(1)}s ago`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  // A worker in trouble says why (a weight source it cannot reach, a folder it cannot see).
  const why = rows.filter((w) => w.state === 'error' && w.detail).map((w) => `error ${w.id}: ${w.detail}`);
  return [...[head, ...lines].map((l) => l.map((c, i) => c.padEnd(widths[i]!)).join('  ')), ...why].join('\n');
}
