// `rft trainer --buffer postgres://... --run RUN`: the one trainer of a distributed run. Resumes
// from the newest checkpoint recorded in the buffer (its step) and the buffer position (the
// sampler's recorded batches), trains, publishes every sync_interval steps a checkpoint to its
// weights folder with its sha256 (served over HTTP from this host unless told not to), and NOTIFYs the explorers. Database faults are retried.
import { InfrastructureError } from '../../core/errors.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Task } from '../../core/types.js';
import { logger } from '../../core/log.js';
import { openEventFile } from '../tensorboard.js';
import { engineRecord, initEngine } from '../../model/engine.js';
import { frozenOutsideHeap, outsideHeapNote } from '../../model/external-weights.js';
import { PostgresStore } from '../../buffer/storage/postgres.js';
import { TrainerFencedError, type TrainerLeaseRow } from '../../buffer/storage/trainer-lease.js';
import { JobQueue, workerId } from '../../buffer/queue/job-queue.js';
import { reconnecting, withRetry } from '../../buffer/queue/retry.js';
import { checkStageIndex } from '../../model/checkpoint-meta.js';
import type { EvalResult } from '../evaluate.js';
import { RunMetricsLog } from '../distributed/run-metrics.js';
import { runReward, TaskFeed } from '../setup/tasks.js';
import { stagesOf } from '../setup/trainer.js';
import { runStages, stageStarts } from '../run-loop.js';
import { DistributedRun } from './distributed-run.js';
import { TrainerBeat } from './trainer-beat.js';
import { thisMachine } from './machine.js';
import { PLANNED_SELECTORS } from '../distributed/jobs-plan.js';
import { PlannedSelector } from '../distributed/selector-plan.js';
import { loadWorkspaceCode } from '../workspace-code.js';
import { readDistributedConfig } from '../distributed/explorer.js';
import { LinkWatch } from '../distributed/link-watch.js';
import { taskSynthesis } from '../task-synthesis.js';
import { loadVerified } from '../distributed/weights.js';
import { certSha256, defaultAdvertisedHost, WeightsServer, type ServerTls } from '../distributed/weights-http.js';
import { TrainerWeights } from '../distributed/weights-trainer.js';
import { RunState } from '../run-state.js';

const log = logger('dist-trainer');

export interface DistributedTrainerOptions {
  url: string;
  runId: string;
  signal?: AbortSignal;
  heartbeatMs?: number;
  /**
   * Serve the published weights over HTTP (default; port 0 = any free port, host = the address
   * explorers reach this machine at, default its first non-loopback IPv4), or false: explorers read
   * the weights folder, which must then be shared at the same path on every machine.
   */
  serveWeights?: { port?: number; host?: string; tls?: ServerTls } | false;
  /** This host's weights folder (default: the one `rft coordinator --weights` recorded, or ./rft-weights with an object store). */
  weightsDir?: string;
  /** metrics.jsonl, report.html and summary.json (default: the run's folder next to its weights, WEIGHTS/RUN). */
  outDir?: string;
  /** Take the run's trainer lease from a live holder (`--take-over`); that trainer stops at its next write. */
  takeOver?: boolean;
  /** A holder silent this long has lost the lease (default DEFAULT_TRAINER_LEASE_TIMEOUT_MS, 120 s). */
  leaseTimeoutMs?: number;
}

/**
 * A lease holder proven gone: it ran on this very machine (same boot id and pid namespace, recorded in
 * its lease row) and its pid is unknown here. Its lease is taken at once, so a trainer restarted where it
 * crashed need not wait out the lease. A same hostname is no proof (issue 40 item 13): on another machine
 * the holder's pid is unknown too, and its live lease was taken. A holder not proven gone keeps its
 * lease until it is stale (the lease timeout) or `--take-over`.
 */
export function holderGone(h: TrainerLeaseRow, here: string = thisMachine()): boolean {
  if (!here || h.machine !== here || h.pid === process.pid) return false;
  try {
    process.kill(h.pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

export interface TrainerResult {
  worker: string;
  /** The checkpoint version it started (or resumed) from. */
  startedFrom: number;
  step: number;
  done: boolean;
  /** Fraction of the loop's wall time spent waiting for experiences. */
  idle: number;
  wallS: number;
  topUps: number;
  /** Held-out accuracy of the starting weights (null: resumed past the start, or no eval set) and at the end (null: stopped early). */
  eval: { start: EvalResult | null; final: EvalResult | null };
  /** The run's metrics.jsonl, report.html and summary.json on the trainer's host. */
  outDir: string;
}

/** Takes the run's trainer lease (another holder's only with takeOver, or when its process is gone) and fences the job queue with it. */
async function takeTrainerLease(
  raw: PostgresStore,
  q: JobQueue,
  o: DistributedTrainerOptions,
  id: string,
  retry: Parameters<typeof withRetry>[1],
): Promise<void> {
  const { lease, tookFrom } = await withRetry(
    () =>
      raw.acquireTrainerLease(o.runId, {
        holder: id,
        host: hostname(),
        pid: process.pid,
        machine: thisMachine(),
        timeoutMs: o.leaseTimeoutMs,
        takeOver: o.takeOver,
        holderGone,
      }),
    retry,
  );
  // The jobs it queues are fenced too: a taken-over trainer cannot queue into the holder's run.
  q.fence(o.runId, lease.epoch);
  if (tookFrom)
    log.warn(
      `run ${o.runId}: took the trainer lease (epoch ${lease.epoch}) from ${tookFrom.holder} (host ${tookFrom.host}, pid ${tookFrom.pid}); it stops at its next write`,
    );
}

/**
 * Serves the run's weights over HTTP from this host, recorded in the run so that every explorer finds
 * the current address (a restarted trainer records its new one).
 */
async function serveWeights(
  tw: TrainerWeights,
  store: Pick<PostgresStore, 'listCheckpoints' | 'setState'>,
  runId: string,
  id: string,
  opts: Exclude<DistributedTrainerOptions['serveWeights'], false> = {},
): Promise<WeightsServer> {
  const server = new WeightsServer();
  for (const [sum, path] of tw.servable(await store.listCheckpoints(runId))) server.add(sum, path);
  const tls = opts.tls;
  const port = await server.listen(opts.port ?? 0, undefined, tls);
  const host = opts.host ?? defaultAdvertisedHost();
  const url = `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  // With TLS the certificate goes with the address: explorers pin its sha256 unless given a CA.
  await store.setState(runId, 'dist:weights-http', {
    url,
    token: server.token,
    trainer: id,
    ...(tls ? { tls: { cert: tls.cert, sha256: certSha256(tls.cert) } } : {}),
  });
  log.info(`run ${runId}: serving weights at ${url}`);
  return server;
}

export async function distributedTrainer(o: DistributedTrainerOptions): Promise<TrainerResult> {
  await initEngine();
  const t0 = Date.now();
  // Aborted by the caller, or by a lease renewal that finds the run taken over (fenced below).
  const ac = new AbortController();
  if (o.signal?.aborted) ac.abort();
  else o.signal?.addEventListener('abort', () => ac.abort(), { once: true });
  const signal = ac.signal;
  // The trainer's own database link: an outage is logged and named as the reason for a wait.
  const link = new LinkWatch();
  const retry = link.retry({ signal });
  const raw = await withRetry(() => PostgresStore.open(o.url), retry);
  const store = reconnecting(raw, retry);
  const q = await withRetry(() => JobQueue.open(o.url), retry).catch(async (e: unknown) => {
    await raw.close();
    throw e;
  });
  const id = workerId('trainer');
  // One trainer per run: the lease's epoch fences every write of this store for the run, so a trainer
  // that lost it (another took over) cannot overwrite a checkpoint record, publish or mark rows trained.
  try {
    await takeTrainerLease(raw, q, o, id, retry);
  } catch (e) {
    await q.close();
    await raw.close();
    throw e;
  }
  // The heartbeat renews the lease; a renewal that finds the run taken over aborts it (trainer-beat.ts).
  const beat = new TrainerBeat(raw, q, o.runId, id, () => ac.abort());
  const status = beat.status;
  await beat.start(o.heartbeatMs ?? 1000);
  let server: WeightsServer | null = null;
  try {
    const cfg = await readDistributedConfig(() => store.getState(o.runId, 'dist:config'), `run ${o.runId}`);
    // This host's weights folder, and the run's object store (S3) when it has one.
    const tw = await TrainerWeights.open(
      o.runId,
      (k) => store.getState(o.runId, k),
      q.pool,
      await store.listCheckpoints(o.runId),
      o.weightsDir,
    );
    const weightsDir = tw.dir;
    const outDir = o.outDir ?? join(weightsDir, o.runId);
    const latest = await store.latestCheckpoint(o.runId);
    if (!latest) throw new InfrastructureError(`run ${o.runId}: no checkpoint in ${store.location} to start from`);
    // From this host's disk, else fetched: v0 from the database (the coordinator put it there), any
    // version from the object store. So the trainer needs no folder of the coordinator's machine.
    // LoRA: the frozen base outside the wasm heap, as the run's start loaded it (setup/model.ts initialModel).
    const external = frozenOutsideHeap(cfg.model.lora);
    const latestDir = await tw.local(latest);
    const { model, meta, tokenizer: tok } = loadVerified(latestDir, latest.checksum, { external });
    // The newest checkpoint folder on this host: a PPO stage continues the critic saved there (critic/,
    // outside the published checksum; a version fetched from elsewhere has none and starts a fresh one).
    const criticFrom = latestDir;
    const note = outsideHeapNote(model);
    if (note) log.info(`run ${o.runId}: v${meta.version} loaded, ${note}`);
    // Weights over HTTP from this host: explorers need no shared folder.
    if (o.serveWeights !== false && !tw.object) server = await serveWeights(tw, store, o.runId, id, o.serveWeights);
    else await store.setState(o.runId, 'dist:weights-http', null);
    if (!tok) throw new InfrastructureError(`${latest.path}: checkpoint has no tokenizer.json`);
    const stages = stagesOf(cfg);
    const starts = stageStarts(stages);
    const version = typeof meta.step === 'number' ? meta.step : meta.version;
    status.version = version;
    // Where the run stands: the stage of the newest checkpoint and its step in that stage.
    const stageIndex = checkStageIndex(meta, stages.length, latest.path);
    const resumeStageStep = typeof meta.stage_step === 'number' ? meta.stage_step : 0;
    // The run's record on this host, as a local run keeps it: metrics.jsonl (one line per step, the
    // evaluations), report.html and summary.json at the end.
    mkdirSync(outDir, { recursive: true });
    // Kept with the run in the database: a trainer resuming on another machine writes the whole curve.
    const tensorboard = openEventFile(cfg.monitor.tensorboard, outDir, o.runId, 'trainer', (m) => log.warn(m));
    const metrics = await RunMetricsLog.open(join(outDir, 'metrics.jsonl'), raw, o.runId, version, retry, tensorboard);
    metrics.write(engineRecord('trainer'));
    const evalTasks = (await store.getState<Task[]>(o.runId, 'dist:eval')) ?? [];
    await loadWorkspaceCode(cfg); // workflow.file: trusted by RFT_TRUST_WORKSPACE_CODE=1
    const reward = runReward(cfg);
    const tasks = await store.listTasks(o.runId);
    // Explore steps of the run so far (records of earlier trainers, on any host), then this one's.
    const exploreSteps = metrics.restored.filter((r) => r.kind === 'train' && r.explored === true).length;
    // priority / curriculum learn from outcomes: the trainer's TaskFeed picks each step's tasks as it queues them.
    let planner: PlannedSelector | undefined;
    if (!PLANNED_SELECTORS.includes(cfg.taskset.selector)) {
      planner = new PlannedSelector(new TaskFeed(cfg, tasks), tasks, cfg.explorer.tasks_per_step, (st) =>
        store.setState(o.runId, 'dist:selector', st),
      );
      planner.restore(await store.getState(o.runId, 'dist:selector'));
    }
    // taskset.pipeline synthesize: a round after each trained batch, from its tasks; accepted tasks are
    // stored (a restarted trainer lists them with the others) and join the list the job plan picks from.
    const synth = taskSynthesis(cfg, {
      runId: o.runId,
      store,
      pools: { train: tasks, eval: evalTasks, reward },
      tok,
      onAccepted: (ts) => void tasks.push(...ts),
      onRound: (r) => metrics.write({ kind: 'synthesize', ...r }),
    });
    const placement = new DistributedRun({
      runId: o.runId,
      cfg,
      stages,
      starts,
      store,
      raw,
      q,
      retry,
      link,
      signal,
      tw,
      weightsDir,
      server,
      model,
      tok,
      external,
      evalTasks,
      reward,
      metrics,
      tasks,
      planner,
      synth,
      status,
      stageIndex,
      stageStep: resumeStageStep,
      criticFrom,
      exploreSteps,
    });
    const state = new RunState(store, o.runId);
    const run = await runStages(cfg, placement, {
      runId: o.runId,
      runDir: outDir,
      metrics,
      state,
      t0,
      signal,
      reportFile: cfg.monitor.report ? join(outDir, 'report.html') : '',
      reportTitle: `RFT Studio distributed run ${o.runId}`,
      reportExtra: { distributed: true },
      // metrics.jsonl holds the whole run (restored from the database): every periodic evaluation counts.
      evalsSince: 0,
      // Stored by the setup beside the eval tasks (a run set up before it was stored: described by count).
      evalSet: {
        note:
          (await store.getState<string>(o.runId, 'dist:eval_set')) ??
          `${evalTasks.length} eval task(s) stored by the setup`,
        tasks: evalTasks.length,
      },
    });
    // Taken over while it trained: not a stop of this run, an error naming the holder (exit 1).
    if (beat.fenced) throw beat.fenced;
    const { idle, topUps } = placement;
    status.state = run.stopped ? 'stopped' : 'done';
    status.detail = '';
    log.info(
      `run ${o.runId}: ${status.state} at step ${status.version}, idle ${(idle * 100).toFixed(1)}%, ${topUps} top-up job(s)`,
    );
    model.dispose();
    const evalStart = run.start ?? (await state.start()) ?? null;
    const result: TrainerResult = {
      worker: id,
      startedFrom: meta.version,
      step: status.version!,
      done: !run.stopped,
      idle,
      wallS: (Date.now() - t0) / 1000,
      topUps,
      eval: { start: evalStart, final: run.final },
      outDir,
    };
    await metrics.flush();
    if (!run.stopped) {
      const summary = { ...run.summary, distributed: true, top_ups: topUps };
      // With the run too: any host can show it, whichever trainer finished.
      await store.setState(o.runId, 'dist:summary', summary);
      writeFileSync(join(outDir, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
    }
    return result;
  } catch (e) {
    if (e instanceof TrainerFencedError) beat.fence(e);
    throw e;
  } finally {
    await beat.stop();
    await server?.close();
    // The next trainer starts at once; a lease another took is theirs (release compares the epoch).
    await raw.releaseTrainerLease(o.runId).catch(() => undefined);
    await q.close();
    await raw.close();
  }
}
