// `rft explorer --buffer postgres://... --run RUN`: one rollout worker of a distributed run, on any
// machine that reaches the database and the trainer (weights over HTTP, or a shared folder). Loop: pick
// up the newest published weights (sha256 verified), lease jobs that version may run, roll each out, ack it (experiences +
// completion in one transaction). It never produces with weights more than max_staleness versions
// behind the trainer, and a lost connection (database restart, network cut) is waited out: its
// leases expire meanwhile, other explorers take the jobs over, and its own late acks are refused.
// With explorer.partial_rollout a job may be the continuation of a group's stored trajectories (partial-jobs.ts).
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunConfig } from '../../core/config.js';
import { storedRunConfig } from '../load-config.js';
import { logger } from '../../core/log.js';
import { initEngine } from '../../model/engine.js';
import {
  JobQueue,
  experienceId,
  workerId,
  type AckExtra,
  type AckResult,
  type LeasedJob,
} from '../../buffer/queue/job-queue.js';
import type { Experience } from '../../core/types.js';
import { WeightsListener } from '../../buffer/queue/listen.js';
import { isConnectionError, withRetry } from '../../buffer/queue/retry.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { StateLog } from './state-log.js';
import { outsideHeapNote } from '../../model/external-weights.js';
import { makeRolloutEngine, type SyncedRolloutModel } from '../../explorer/rollout-engine.js';
import { workflowSampling, workflows } from '../../explorer/workflow.js';
import '../../explorer/workflows/index.js';
import { runReward } from '../setup/tasks.js';
import { experiencePipeline, rolloutSampling } from '../setup/explorer.js';
import { stagesOf } from '../setup/trainer.js';
import { makeExplorer } from '../explorer-half.js';
import { stageOfStep } from '../run-loop.js';
import { loadWorkspaceCode } from '../workspace-code.js';
import { ChecksumError } from './weights.js';
import type { ClientTls, HttpWeightsSource } from './weights-http.js';
import { openRecordedStore, type WeightsStoreSpec } from './weights-store.js';
import { WeightsLoader } from './weights-load.js';
import { brokenChain, runPartialJob } from './partial-jobs.js';
import { ConflictError } from '../../core/errors.js';

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

// The abort listener goes with the timer: one left per call piles up on the run's long-lived signal
// (MaxListenersExceededWarning after 10 waits).
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((r) => {
    if (signal?.aborted) return r();
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      r();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

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
  const workflow = workflows.get(cfg.workflow.name);
  const reward = runReward(cfg);
  // The same experience pipeline as every placement: a filtered experience is never acked. The
  // advantages are those of the stage the job's trainer step belongs to.
  let jobTarget = 0;
  const pipeline = experiencePipeline(cfg, () => stages[stageOfStep(stages, jobTarget)]!.algorithm);
  const S = cfg.buffer.max_staleness;
  const batch = o.batch ?? 1;
  const partial = cfg.explorer.partial_rollout;
  const sampling = rolloutSampling(cfg);
  // A job (without partial rollouts) is one explore step of the run's explorer: its task, numbered by the
  // trainer step it feeds, with the job's seed; its experiences carry the job's ids and provenance and
  // are kept for the ack (one transaction with the job's completion) instead of appended.
  let current: { job: LeasedJob; provenance: Record<string, unknown> } | undefined;
  let made: Experience[] = [];
  const explorer = partial
    ? undefined
    : makeExplorer(cfg, {
        runId: o.runId,
        reward,
        tasks: { next: () => [current!.job.task] },
        sink: {
          append: async (exps) => {
            made = exps;
          },
        },
        seed: cfg.seed + 1,
        process: (raw) =>
          pipeline.run(raw).experiences.map((e, i) => ({
            ...e,
            id: experienceId(o.runId, current!.job.id, i),
            groupId: `${o.runId}:job:${current!.job.id}`,
            // weights: the sha256 of the version that made it (provenance beyond the version number).
            metadata: { ...(e.metadata ?? {}), ...current!.provenance },
          })),
      });
  let model: LocalRolloutModel | null = null;
  // explorer.engine llama-cpp: llama.cpp samples a GGUF of each loaded version (`model` keeps the version and weights); auto: per batch, llama.cpp or native.
  let engine: SyncedRolloutModel | undefined;
  let modelChecksum = '';
  let state = 'starting';
  let detail = '';
  let notified = -1;
  const acks: number[] = [];
  const res: ExplorerResult = {
    worker: id,
    jobs: 0,
    experiences: 0,
    partial: { continued: 0, finished: 0, queued: 0, maxTrajectoryTokens: 0 },
    refused: { lease_lost: 0, stale: 0 },
    dropped: { lease_lost: 0, stale: 0, broken_chain: 0 },
    loads: { folder: 0, http: 0, s3: 0 },
    busyS: 0,
    waitS: { weights: 0, jobs: 0 },
    wallS: 0,
  };
  const held = new Set<LeasedJob>();
  // The run's object store (S3), when it has one: credentials from this process's environment.
  const wstore = await openRecordedStore(() =>
    withRetry(() => q.getState<WeightsStoreSpec>(o.runId, 'dist:weights-store'), { signal: o.signal }),
  );
  const weights = new WeightsLoader(
    join(
      o.cacheDir ?? join(tmpdir(), 'rft-weights'),
      o.runId.replace(/[^A-Za-z0-9._-]/g, '_'),
      id.replace(/[^A-Za-z0-9._-]/g, '_'),
    ),
    { runId: o.runId, store: wstore, tls: o.tls },
  );
  let syncFailingSince: number | null = null;
  let wake: (() => void) | null = null;
  const listener = new WeightsListener(q.connectionString, q.schema, o.runId, (v) => {
    notified = Math.max(notified, v);
    wake?.();
  });
  listener.start();
  // Heartbeat: the worker row for `rft workers`, and the renewal of this worker's leases.
  const beat = async () => {
    const now = Date.now();
    while (acks.length && acks[0]! < now - 30_000) acks.shift();
    const span = Math.min(30, (now - t0) / 1000);
    try {
      await q.heartbeat(o.runId, {
        id,
        role: 'explorer',
        state,
        detail,
        modelVersion: model?.version ?? null,
        done: res.experiences,
        throughput: span > 0 ? acks.length / span : 0,
        startedAt: t0,
      });
      if (held.size) await q.renew(o.runId, id, leaseMs);
    } catch {
      // disconnected: the main loop notices and waits
    }
  };
  await beat(); // a worker shows up as soon as it joins
  const hb = setInterval(() => void beat(), o.heartbeatMs ?? 1000);
  // The worker row always has the current state; the log gets a line when the kind of state changes
  // (numbers ignored) or, for the same one, every 30 s; each job's start only at debug level.
  const stateLog = new StateLog((level, line) => log[level](line));
  const setState = (s: string, d = '', level: 'info' | 'warn' | 'error' = 'info') => {
    if (s === 'generating') log.debug(`${s}: ${d}`);
    else stateLog.say(s, d, level);
    state = s;
    detail = d;
  };
  let backoff = 100;
  try {
    while (!o.signal?.aborted) {
      try {
        if (await q.getState(o.runId, 'dist:done')) break;
        const latest = await q.latestVersion(o.runId);
        if (!latest) throw new Error(`run ${o.runId}: no published weights`);
        if (!model || latest.version > model.version) {
          const http = await q.getState<HttpWeightsSource>(o.runId, 'dist:weights-http');
          // While a sync keeps failing, the row (and the log) keep saying why instead of flicking back to syncing.
          if (syncFailingSince === null) setState('syncing', `v${latest.version}`);
          try {
            const { ck, from } = await weights.load(latest, http);
            if (!ck.tokenizer) throw new ChecksumError(`${latest.path}: checkpoint has no tokenizer.json`);
            model?.model.dispose();
            model = new LocalRolloutModel(ck.model, ck.tokenizer, latest.version);
            if (cfg.explorer.engine !== 'native') {
              engine ??= makeRolloutEngine({
                engine: cfg.explorer.engine,
                workers: 1,
                llamaGpu: cfg.explorer.llama_cpp_gpu,
                config: ck.model.config,
                tokenizer: ck.tokenizer,
              });
              await engine?.setWeights(ck.model, latest.version);
            }
            modelChecksum = latest.checksum;
            res.loads[from]++;
            const note = outsideHeapNote(ck.model); // loaded outside the wasm heap (weights-load.ts) when the addon allows
            log.debug(
              `v${latest.version} loaded from ${from === 'http' ? http!.url : from === 's3' ? wstore!.where : latest.path}${note ? `, ${note}` : ''}`,
            );
            syncFailingSince = null;
          } catch (e) {
            // A version pruned while we read is normal for a moment (the next loop sees a newer one); a
            // source that stays unreachable is an error in the log and in this worker's row within seconds.
            syncFailingSince ??= Date.now();
            const msg = `weights v${latest.version}: ${(e as Error).message}`;
            if (Date.now() - syncFailingSince >= 3000) setState('error', msg, 'error');
            else setState('waiting', msg);
            const w0 = performance.now();
            await sleep(1000, o.signal);
            res.waitS.weights += (performance.now() - w0) / 1000;
            continue;
          }
        }
        backoff = 100;
        if (model.version < latest.version - S) {
          setState('waiting', `weights v${model.version} are stale (newest v${latest.version}, bound ${S})`);
          const w0 = performance.now();
          await sleep(500, o.signal);
          res.waitS.weights += (performance.now() - w0) / 1000;
          continue;
        }
        const jobs = await q.lease(o.runId, id, model.version, batch, leaseMs);
        if (!jobs.length) {
          const forWeights = (await q.versionGated(o.runId, model.version)) > 0;
          setState('waiting', forWeights ? `no job for v${model.version}` : 'no job planned yet');
          const w0 = performance.now();
          await new Promise<void>((r) => {
            wake = r;
            void sleep(300, o.signal).then(r);
          });
          wake = null;
          res.waitS[forWeights ? 'weights' : 'jobs'] += (performance.now() - w0) / 1000;
          continue;
        }
        for (const j of jobs) held.add(j);
        const leasedAt = Date.now();
        for (const job of jobs) {
          if (o.signal?.aborted) break;
          // A worker that was paused or cut off may hold leases that expired and went to someone else,
          // and weights that went stale meanwhile: checked before each rollout, not only at the ack.
          if (Date.now() - leasedAt > 1000) {
            const chk = await q.leaseCheck(o.runId, job, id);
            if (!chk.live) {
              held.delete(job);
              res.dropped.lease_lost++;
              log.warn(`job ${job.id} (attempt ${job.attempt}): lease lost before its rollout; dropped`);
              continue;
            }
            if (model.version < chk.latest - S) {
              for (const j of held) await q.release(o.runId, j, id);
              res.dropped.stale += held.size;
              log.warn(
                `weights v${model.version} went stale (newest v${chk.latest}, bound ${S}): ${held.size} job(s) given back`,
              );
              held.clear();
              break;
            }
          }
          setState('generating', `job ${job.id} with v${model.version}`);
          const jobStart = performance.now();
          jobTarget = job.target;
          const seed = (cfg.seed * 1_000_003 + hashString(job.id) * 31 + job.attempt) >>> 0;
          const provenance = { job: job.id, worker: id, attempt: job.attempt, weights: modelChecksum };
          let exps: Experience[] = [];
          let extra: AckExtra = {};
          // Partial rollouts (partial-jobs.ts): the group's stored rows are read by this lease's holder only.
          const stored = partial && job.continues ? await q.partialRows(o.runId, job.continues) : [];
          // A continuation whose rows are gone is acked with nothing (done, no continuation), never
          // thrown: every explorer leasing it would fail the same way. Its step is topped up by the
          // trainer (feeding-sampler.ts) as for any group that produced nothing; leftover rows stay partial.
          let broken = partial ? brokenChain(job, stored) : null;
          if (partial && !broken) {
            const pr = await runPartialJob(job, stored, {
              runId: o.runId,
              workflow,
              model: engine ?? model,
              reward,
              sampling: workflowSampling(sampling, (engine ?? model).tokenizer),
              repeatTimes: cfg.explorer.repeat_times,
              budget: partial.max_tokens_per_step,
              seed,
              metadata: provenance,
              process: (raw) => pipeline.run(raw).experiences,
            });
            exps = pr.experiences;
            extra = { replacing: pr.replacing, ...(pr.next ? { next: pr.next } : {}) };
            res.partial.continued += pr.continued;
            res.partial.finished += pr.finished;
            res.partial.maxTrajectoryTokens = Math.max(res.partial.maxTrajectoryTokens, pr.maxTrajectoryTokens);
            if (pr.next) res.partial.queued++;
          } else if (explorer) {
            current = { job, provenance };
            explorer.step = job.target;
            await explorer.exploreStep(engine ?? model, { seed });
            exps = made;
            made = [];
          }
          // Retried until the database answers, however long the cut: the answer is then definite (landed,
          // or refused as lost / stale and counted), never a rollout silently given up.
          const ack = () =>
            withRetry(() => q.ack(o.runId, job, id, model!.version, S, exps, extra), { signal: o.signal });
          let r: AckResult;
          try {
            r = await ack();
          } catch (e) {
            // The rows changed while this job continued them (the ack's transaction was rolled back whole).
            if (!(e instanceof ConflictError) || !extra.replacing?.length) throw e;
            broken = e.message;
            exps = [];
            extra = {};
            r = await ack();
          }
          held.delete(job);
          res.busyS += (performance.now() - jobStart) / 1000;
          if (r.ok && broken) {
            res.dropped.broken_chain++;
            log.warn(
              `${broken}: the group's chain is broken (rows cleared or edited); job acked with no experiences, its step is topped up`,
            );
          } else if (r.ok) {
            res.jobs++;
            // Partial rows are not experiences yet (their group is still being rolled out).
            const done = exps.filter((e) => e.status !== 'partial').length;
            res.experiences += done;
            for (let i = 0; i < done; i++) acks.push(Date.now());
          } else {
            res.refused[r.reason]++;
            log.warn(`job ${job.id} (attempt ${job.attempt}) refused: ${r.reason}; its experiences are dropped`);
          }
        }
      } catch (e) {
        if (!isConnectionError(e)) throw e;
        held.clear(); // leases run out while we are away; acks after that are refused anyway
        setState('disconnected', (e as Error).message);
        await sleep(backoff, o.signal);
        backoff = Math.min(backoff * 2, 2000);
      }
    }
    setState('stopped');
  } finally {
    clearInterval(hb);
    for (const j of held) await q.release(o.runId, j, id).catch(() => undefined);
    await beat();
    await listener.close();
    await engine?.close();
    model?.model.dispose();
    weights.dispose();
    await q.close();
  }
  res.wallS = (Date.now() - t0) / 1000;
  return res;
}

function hashString(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}
