// `rft explorer --buffer postgres://... --run RUN`: one rollout worker of a distributed run, on any
// machine that reaches the database and the trainer (weights over HTTP, or a shared folder). It runs
// the one explorer driver (explorer/explorer-loop.ts driveExplorer) with the newest published weights,
// sha256 verified, as its weights source, and jobs leased from the run's queue as its gate
// (lease-gate.ts: lease what that version may run, roll each out, ack it with its experiences in one
// transaction). It never produces with weights more than max_staleness versions behind the trainer,
// and a lost connection (database restart, network cut) is waited out: its leases expire meanwhile,
// other explorers take the jobs over, and its own late acks are refused. This file sets it up: the
// run's stored config, the explorer, the weights loader, the heartbeat row and the state log.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunConfig } from '../../core/config.js';
import { storedRunConfig } from '../load-config.js';
import { logger } from '../../core/log.js';
import { initEngine } from '../../model/engine.js';
import { JobQueue, experienceId, workerId, type LeasedJob } from '../../buffer/queue/job-queue.js';
import type { Experience } from '../../core/types.js';
import { WeightsListener } from '../../buffer/queue/listen.js';
import { isConnectionError, withRetry } from '../../buffer/queue/retry.js';
import { StateLog } from './state-log.js';
import { workflows } from '../../explorer/workflows/index.js';
import { runReward } from '../setup/tasks.js';
import { experiencePipeline, rolloutSampling } from '../setup/explorer.js';
import { stagesOf } from '../setup/trainer.js';
import { openLeasedExplorerHalf } from '../explorer-half.js';
import { stageOfStep } from '../run-loop.js';
import { loadWorkspaceCode } from '../workspace-code.js';
import type { ClientTls } from './weights-http.js';
import { openRecordedStore, type WeightsStoreSpec } from './weights-store.js';
import { WeightsLoader } from './weights-load.js';
import { VerifiedWeights } from './verified-weights.js';
import { LeaseGate } from './lease-gate.js';
import { driveExplorer } from '../../explorer/explorer-loop.js';
import { DEFAULT_TRAINER_WAIT_S, TrainerLostError, TrainerWatch } from './trainer-lost.js';

const log = logger('dist-explorer');

export interface DistributedExplorerOptions {
  url: string;
  runId: string;
  /** Jobs leased at once (default 1: N explorers share each step's tasks_per_step jobs). */
  batch?: number;
  /** Lease length; renewed every heartbeat while the rollout runs (default 10 s). */
  leaseMs?: number;
  heartbeatMs?: number;
  signal?: AbortSignal;
  /** Where weights fetched over HTTP are kept (a folder per worker below it; default the OS temp folder). */
  cacheDir?: string;
  /** How to check an HTTPS weight server: a CA (PEM text) or a pinned sha256 (default: the one the trainer recorded). */
  tls?: ClientTls;
  /** Seconds a lost trainer is waited for before this explorer exits with TrainerLostError (default DEFAULT_TRAINER_WAIT_S; 0: forever). */
  trainerWaitS?: number;
}

export interface ExplorerResult {
  worker: string;
  jobs: number;
  experiences: number;
  refused: { lease_lost: number; stale: number };
  /**
   * Jobs let go before their rollout: the lease had been lost (paused, cut off), or the weights had gone
   * stale; broken_chain: continuations whose partial rows were gone or no longer partial (cleared, edited
   * by hand), acked with no experiences (not in `jobs`) so that no explorer fails on them again.
   */
  dropped: { lease_lost: number; stale: number; broken_chain: number };
  /** Versions loaded from the recorded folder (this host sees it), over HTTP from the trainer, from the S3 store. */
  loads: { folder: number; http: number; s3: number };
  /** Seconds spent rolling out and acking (the rest: waiting for jobs or weights, loading, reconnecting). */
  busyS: number;
  /**
   * Seconds waiting: for weights (its version is too old for every open job, or stale), or for jobs
   * (none planned: the trainer plans sync_offset, in async max_staleness, steps ahead). Async never waits for weights.
   */
  waitS: { weights: number; jobs: number };
  wallS: number;
  /**
   * Partial rollouts: trajectories continued and of them finished, continuation jobs queued by its
   * acks (whether they landed or not), most new tokens one trajectory got in one job.
   */
  partial: { continued: number; finished: number; queued: number; maxTrajectoryTokens: number };
}

export async function readDistributedConfig(get: () => Promise<unknown>, what: string): Promise<RunConfig> {
  const raw = await get();
  if (raw === null)
    throw new Error(
      `${what}: no distributed run of that id in the buffer (create it with \`rft coordinator CONFIG --buffer URL --run RUN\`)`,
    );
  return storedRunConfig(raw, `${what} (its dist:config)`);
}

export async function distributedExplorer(o: DistributedExplorerOptions): Promise<ExplorerResult> {
  await initEngine();
  const t0 = Date.now();
  const leaseMs = o.leaseMs ?? 10_000;
  const q = await withRetry(
    () => JobQueue.open(o.url, { queryTimeoutMs: Math.max(2000, Math.min(5000, leaseMs / 2)) }),
    { signal: o.signal },
  );
  const id = workerId('explorer');
  const cfg = await readDistributedConfig(
    () => withRetry(() => q.getState(o.runId, 'dist:config'), { signal: o.signal }),
    `run ${o.runId}`,
  );
  const stages = stagesOf(cfg);
  await loadWorkspaceCode(cfg); // workflow.file: trusted by RFT_TRUST_WORKSPACE_CODE=1
  const reward = runReward(cfg);
  // The advantages are those of the stage the job's trainer step belongs to.
  let current: { job: LeasedJob; provenance: Record<string, unknown> } | undefined;
  const pipeline = experiencePipeline(cfg, () => stages[stageOfStep(stages, current?.job.target ?? 0)]!.algorithm);
  // A job (without partial rollouts) is one explore step of the run's explorer half, opened as every
  // placement opens it: its task, numbered by the trainer step it feeds, with the job's seed; its
  // experiences carry the job's ids and provenance and are kept for the ack (one transaction with the
  // job's completion) instead of appended.
  let made: Experience[] = [];
  const explorer = cfg.explorer.partial_rollout
    ? undefined
    : openLeasedExplorerHalf({
        cfg,
        runId: o.runId,
        reward,
        pipeline,
        seed: cfg.seed + 1,
        tasks: { next: () => [current!.job.task] },
        sink: {
          append: async (exps) => {
            made = exps;
          },
        },
        relabel: (exps) =>
          exps.map((e, i) => ({
            ...e,
            id: experienceId(o.runId, current!.job.id, i),
            groupId: `${o.runId}:job:${current!.job.id}`,
            // weights: the sha256 of the version that made it (provenance beyond the version number).
            metadata: { ...(e.metadata ?? {}), ...current!.provenance },
          })),
      }).explorer;
  let state = 'starting';
  let detail = '';
  let level: 'info' | 'warn' | 'error' = 'info';
  let wake: (() => void) | null = null;
  let backoff = 100;
  const gate = new LeaseGate({
    q,
    runId: o.runId,
    worker: id,
    cfg,
    batch: o.batch ?? 1,
    leaseMs,
    ...(explorer ? { explorer } : {}),
    takeMade: () => {
      const m = made;
      made = [];
      return m;
    },
    setCurrent: (job, provenance) => {
      current = { job, provenance };
    },
    workflow: workflows.get(cfg.workflow.name),
    reward,
    sampling: rolloutSampling(cfg),
    process: (raw) => pipeline.run(raw).experiences,
    checksum: () => weights.checksum,
    notified: () => new Promise<void>((r) => (wake = r)),
    trainer: new TrainerWatch(q.pool, o.runId, o.trainerWaitS ?? DEFAULT_TRAINER_WAIT_S),
    ...(o.signal ? { signal: o.signal } : {}),
  });
  // The run's object store (S3), when it has one: credentials from this process's environment.
  const wstore = await openRecordedStore(() =>
    withRetry(() => q.getState<WeightsStoreSpec>(o.runId, 'dist:weights-store'), { signal: o.signal }),
  );
  const loader = new WeightsLoader(
    join(
      o.cacheDir ?? join(tmpdir(), 'rft-weights'),
      o.runId.replace(/[^A-Za-z0-9._-]/g, '_'),
      id.replace(/[^A-Za-z0-9._-]/g, '_'),
    ),
    { runId: o.runId, store: wstore, tls: o.tls },
  );
  const weights = new VerifiedWeights(q, o.runId, cfg, loader, wstore?.where, () => (backoff = 100));
  const listener = new WeightsListener(q.connectionString, q.schema, o.runId, () => wake?.());
  listener.start();
  // The worker row always has the current state; the log gets a line when the kind of state changes
  // (numbers ignored) or, for the same one, every 30 s; each job's start only at debug level.
  const stateLog = new StateLog((lv, line) => log[lv](line));
  const say = () => {
    if (state === 'generating') log.debug(`${state}: ${detail}`);
    else stateLog.say(state, detail, level);
  };
  // Heartbeat: the worker row for `rft workers`, the renewal of this worker's leases, and a state that
  // lasts a log line every 30 s.
  const beat = async () => {
    const now = Date.now();
    const acks = gate.acks;
    while (acks.length && acks[0]! < now - 30_000) acks.shift();
    const span = Math.min(30, (now - t0) / 1000);
    if (state !== 'generating') stateLog.say(state, detail, level);
    try {
      await q.heartbeat(o.runId, {
        id,
        role: 'explorer',
        state,
        detail,
        modelVersion: weights.local?.version ?? null,
        done: gate.counts.experiences,
        throughput: span > 0 ? acks.length / span : 0,
        startedAt: t0,
      });
      if (gate.held.size) await q.renew(o.runId, id, leaseMs);
    } catch {
      // disconnected: the driver notices and waits
    }
  };
  await beat(); // a worker shows up as soon as it joins
  const hb = setInterval(() => void beat(), o.heartbeatMs ?? 1000);
  let waitedS = { weights: 0, jobs: 0 };
  try {
    const r = await driveExplorer({
      gate,
      weights,
      // A version pruned while read is normal for a moment (the next poll sees a newer one); a source
      // that stays unreachable is an error in the log and the worker's row within 3 s.
      retryMs: 1000,
      onState: (s, d, trouble) => {
        state = trouble ?? s;
        detail = d ?? '';
        level = trouble === 'error' ? 'error' : 'info';
        say();
      },
      recover: (e) => {
        if (!isConnectionError(e)) return undefined;
        gate.held.clear(); // leases run out while we are away; acks after that are refused anyway
        const ms = backoff;
        backoff = Math.min(backoff * 2, 2000);
        return ms;
      },
      ...(o.signal ? { signal: o.signal } : {}),
    });
    waitedS = { weights: r.waitedS.weights, jobs: r.waitedS.jobs };
  } catch (e) {
    // Its row says why it left (the driver set 'stopped' on the way out); the caller says it (rft explorer: exit 3).
    if (e instanceof TrainerLostError) detail = e.message;
    throw e;
  } finally {
    clearInterval(hb);
    for (const j of gate.held) await q.release(o.runId, j, id).catch(() => undefined);
    await beat();
    await listener.close();
    await weights.close();
    await q.close();
  }
  return {
    worker: id,
    jobs: gate.counts.jobs,
    experiences: gate.counts.experiences,
    refused: gate.counts.refused,
    dropped: gate.counts.dropped,
    loads: weights.loads,
    busyS: gate.counts.busyS,
    waitS: waitedS,
    wallS: (Date.now() - t0) / 1000,
    partial: gate.counts.partial,
  };
}
