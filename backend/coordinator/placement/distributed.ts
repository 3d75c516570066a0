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
import { engineRecord, initEngine } from '../../model/engine.js';
import { saveCheckpoint } from '../../model/checkpoint.js';
import { frozenOutsideHeap, outsideHeapNote } from '../../model/external-weights.js';
import { PostgresStore } from '../../buffer/storage/postgres.js';
import { TrainerFencedError, type TrainerLeaseRow } from '../../buffer/storage/trainer-lease.js';
import { makeSampler } from '../../buffer/sampler/index.js';
import { JobQueue, workerId } from '../../buffer/queue/job-queue.js';
import { reconnecting, withRetry } from '../../buffer/queue/retry.js';
import { checkStageIndex } from '../../model/checkpoint-meta.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { evaluate, type EvalResult } from '../evaluate.js';
import { RunMetricsLog } from '../distributed/run-metrics.js';
import { runReward, TaskFeed } from '../setup/tasks.js';
import { evalOptions } from '../setup/explorer.js';
import { stagesOf } from '../setup/trainer.js';
import { stageCheckpointMeta } from '../setup/run-data.js';
import { openStage, runStages, stageStarts, trainStage, type Placement } from '../run-loop.js';
import { jobSync, PLANNED_SELECTORS } from '../distributed/jobs-plan.js';
import { PlannedSelector } from '../distributed/selector-plan.js';
import { loadWorkspaceCode } from '../workspace-code.js';
import { readDistributedConfig } from '../distributed/explorer.js';
import { FeedingSampler } from '../distributed/feeding-sampler.js';
import { LinkWatch } from '../distributed/link-watch.js';
import { taskSynthesis } from '../task-synthesis.js';
import { checksumDir, loadVerified, pruneVersions, versionDir } from '../distributed/weights.js';
import { certSha256, defaultAdvertisedHost, WeightsServer, type ServerTls } from '../distributed/weights-http.js';
import { TrainerWeights } from '../distributed/weights-trainer.js';

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

/** A lease holder on this host whose process is gone (killed, crashed): its lease is taken at once. */
export function holderGone(h: TrainerLeaseRow): boolean {
  if (h.host !== hostname() || h.pid === process.pid) return false;
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
  let fenced: TrainerFencedError | null = null;
  let renewing = true; // off once the trainer ends and releases the lease
  let state = 'starting';
  let detail = '';
  let version: number | null = null;
  let steps = 0;
  const beat = () => {
    const span = (Date.now() - t0) / 1000;
    // The lease is renewed with the heartbeat; a lost connection is retried at the next beat.
    if (renewing && !fenced)
      void raw.renewTrainerLease(o.runId).catch((e: unknown) => {
        if (!(e instanceof TrainerFencedError) || fenced || !renewing) return;
        fenced = e;
        log.error(e.message);
        ac.abort();
      });
    return q
      .heartbeat(o.runId, {
        id,
        role: 'trainer',
        state,
        detail,
        modelVersion: version,
        done: steps,
        throughput: span > 0 ? steps / span : 0,
        startedAt: t0,
      })
      .catch(() => undefined);
  };
  await beat(); // a worker shows up as soon as it joins
  const hb = setInterval(() => void beat(), o.heartbeatMs ?? 1000);
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
    let criticFrom = latestDir;
    const note = outsideHeapNote(model);
    if (note) log.info(`run ${o.runId}: v${meta.version} loaded, ${note}`);
    // Weights over HTTP from this host: explorers need no shared folder.
    if (o.serveWeights !== false && !tw.object) server = await serveWeights(tw, store, o.runId, id, o.serveWeights);
    else await store.setState(o.runId, 'dist:weights-http', null);
    if (!tok) throw new InfrastructureError(`${latest.path}: checkpoint has no tokenizer.json`);
    const stages = stagesOf(cfg);
    const starts = stageStarts(stages);
    version = typeof meta.step === 'number' ? meta.step : meta.version;
    // Where the run stands: the stage of the newest checkpoint and its step in that stage.
    let stageIndex = checkStageIndex(meta, stages.length, latest.path);
    let resumeStageStep = typeof meta.stage_step === 'number' ? meta.stage_step : 0;
    // The run's record on this host, as a local run keeps it: metrics.jsonl (one line per step, the
    // evaluations), report.html and summary.json at the end.
    mkdirSync(outDir, { recursive: true });
    // Kept with the run in the database: a trainer resuming on another machine writes the whole curve.
    const metrics = await RunMetricsLog.open(join(outDir, 'metrics.jsonl'), raw, o.runId, version, retry);
    metrics.write(engineRecord('trainer'));
    const evalTasks = (await store.getState<Task[]>(o.runId, 'dist:eval')) ?? [];
    await loadWorkspaceCode(cfg); // workflow.file: trusted by RFT_TRUST_WORKSPACE_CODE=1
    const reward = runReward(cfg);
    const groupSize = cfg.explorer.repeat_times;
    const tasks = await store.listTasks(o.runId);
    let topUps = 0;
    let idle = 0;
    // Explore steps of the run so far (records of earlier trainers, on any host), then this one's.
    let exploreSteps = metrics.restored.filter((r) => r.kind === 'train' && r.explored === true).length;
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
    // Stage starts stay on disk: the reference of a stage resumed in the middle is loaded from there.
    const keep = new Set<number>([0]);
    // Placement `distributed`: this process trains every stage; explorers on any machine lease the
    // jobs of exploring stages from the queue and ack their experiences into the buffer; weights go
    // out as sha256-verified versions (HTTP from here, or the shared folder) announced by NOTIFY.
    const placement: Placement = {
      nextStage: async () => stageIndex,
      startEvaluated: async () => (await store.getState(o.runId, 'dist:eval_start')) !== null,
      startEvaluation: (r) => store.setState(o.runId, 'dist:eval_start', r),
      getBase: async () => (await store.getState<number>(o.runId, 'dist:base_accuracy')) ?? undefined,
      setBase: (acc) => store.setState(o.runId, 'dist:base_accuracy', acc),
      evaluate: async (label) => {
        state = 'evaluating';
        detail = `${label}: ${evalTasks.length} task(s) with v${version}`;
        return {
          result: await evaluate(new LocalRolloutModel(model, tok, version!), evalTasks, reward, evalOptions(cfg)),
          step: version!,
        };
      },
      finalWhenStopped: false,
      runStage: async (si, stage) => {
        const stageStep = resumeStageStep;
        resumeStageStep = 0;
        const stageStart = starts[si]!;
        keep.add(stageStart);
        const startCk = (await store.listCheckpoints(o.runId)).find((c) => c.version === stageStart);
        // A stage resumed in the middle: its start on this host (fetched from the database or the object
        // store when this is not the machine that wrote it), for the reference.
        const startPath =
          startCk && startCk.version !== version
            ? await tw
                .local(startCk)
                .catch(
                  (e: Error) => (
                    log.warn(`stage start v${startCk.version}: ${e.message}; the reference is the current weights`),
                    null
                  ),
                )
            : null;
        const parts = await openStage(
          cfg,
          stage,
          model,
          tok,
          store,
          o.runId,
          () => (startPath ? loadVerified(startPath, startCk!.checksum, { external }).model : model.clone()),
          criticFrom,
        );
        if (stageStep === 0)
          metrics.write({ kind: 'stage', stage: stage.name, algorithm: parts.objective.name, distributed: true });
        // Scoped by run: another run in the same database is never sampled nor its recorded batches replayed.
        const inner = makeSampler(store, parts.samplerConfig);
        // An exploring stage queues the jobs of its steps (never past its end); a train-only stage samples expert data.
        const feeding = parts.explores
          ? new FeedingSampler(
              inner,
              q,
              o.runId,
              {
                tasks,
                seed: cfg.seed,
                selector: cfg.taskset.selector,
                tasksPerStep: cfg.explorer.tasks_per_step,
                end: stage.steps === undefined ? undefined : stageStart + stage.steps,
                ...jobSync(cfg, stageStart),
              },
              groupSize,
              planner,
              link,
            )
          : undefined;
        if (feeding && synth)
          feeding.afterBatch = (step, exps) => {
            const byId = new Map(tasks.map((t) => [t.id, t]));
            const parents = [...new Set(exps.filter((e) => e.source === 'usual').map((e) => e.taskId))].flatMap(
              (id) => byId.get(id) ?? [],
            );
            return synth.afterStep(parents, new LocalRolloutModel(model, tok, version!), step);
          };
        log.info(
          `run ${o.runId}: stage ${stage.name} (${parts.objective.name}) from v${version} (step ${stageStep} of ${stage.steps}), batch ${parts.batchSize}`,
        );
        // Every step goes to metrics.jsonl; the log gets a line per step at most every 5 s (and the last).
        let logged = 0;
        const r = await trainStage(
          { cfg, stage, model, tok, evalTasks, reward, metrics, step: version!, stageStep },
          parts,
          {
            sampler: feeding ?? inner,
            syncInterval: cfg.synchronizer.sync_interval,
            signal,
            onMetrics: (rec) => {
              if (rec.kind !== 'train') return metrics.write(rec);
              steps++;
              if (parts.explores) exploreSteps++;
              const usual = (feeding?.last ?? []).filter((e) => e.source === 'usual');
              const rewardMean = usual.length ? usual.reduce((x, e) => x + e.reward, 0) / usual.length : null;
              metrics.write({
                ...rec,
                explored: parts.explores,
                reward_mean: rewardMean,
                full_reward: usual.length ? usual.filter((e) => e.reward >= 1).length / usual.length : null,
              });
              const n = Number(rec.step) + 1 - stageStart;
              if (Date.now() - logged >= 5000 || n >= (stage.steps ?? Infinity)) {
                logged = Date.now();
                log.info(
                  `${stage.name} step ${n}${stage.steps === undefined ? '' : `/${stage.steps}`}: loss ${Number(rec.loss).toFixed(4)}, batch reward ${rewardMean === null ? '-' : rewardMean.toFixed(3)}, waited ${Number(rec.waited_s).toFixed(2)} s`,
                );
              }
            },
            onState: (s, d) => {
              state = s;
              detail = d ?? '';
            },
            publishWeights: async (v, sStep, done) => {
              const dir = versionDir(weightsDir, o.runId, v);
              // Not publishCheckpoint: the version is uploaded and checksummed before its record names it.
              await saveCheckpoint(model, dir, stageCheckpointMeta(v, stage.name, si, sStep, done), tok, {
                critic: parts.trainer.critic,
                criticOptimizer: parts.trainer.criticOptimizer,
              });
              criticFrom = dir;
              const checksum = checksumDir(dir);
              server?.add(checksum, dir); // servable before any explorer hears of it
              // Still the holder? Then upload and prune in the object store; the record's epoch compare below is the guarantee.
              await withRetry(() => raw.renewTrainerLease(o.runId, `checkpoint v${v} (upload and record)`), retry);
              await tw.publish(v, dir, checksum, cfg.buffer.max_staleness + 3, keep); // in the object store before its record names it
              await metrics.flush(); // the curve up to this version is stored before its record names it
              await store.addCheckpoint({ runId: o.runId, version: v, path: dir, checksum, createdAt: Date.now() });
              version = v;
              await withRetry(() => q.notifyWeights(o.runId, v), retry);
              pruneVersions(weightsDir, o.runId, v, cfg.buffer.max_staleness + 3, keep);
            },
          },
        );
        parts.dispose();
        topUps += feeding?.topUps ?? 0;
        idle = r.idle;
        if (!r.stageDone) return true;
        stageIndex = si + 1;
        return false;
      },
      // Explorers stop on dist:done; the final evaluation runs after it, on a quiet machine.
      beforeFinal: async (completed) => {
        if (completed) await store.setState(o.runId, 'dist:done', { step: version, at: Date.now() });
      },
      finish: async () => ({
        trainerSteps: version!,
        exploreSteps,
        checkpoint: versionDir(weightsDir, o.runId, version!),
      }),
    };
    const run = await runStages(cfg, placement, {
      runId: o.runId,
      runDir: outDir,
      metrics,
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
    if (fenced) throw fenced;
    state = run.stopped ? 'stopped' : 'done';
    detail = '';
    log.info(`run ${o.runId}: ${state} at step ${version}, idle ${(idle * 100).toFixed(1)}%, ${topUps} top-up job(s)`);
    model.dispose();
    const evalStart = run.start ?? (await store.getState<EvalResult>(o.runId, 'dist:eval_start'));
    const result: TrainerResult = {
      worker: id,
      startedFrom: meta.version,
      step: version,
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
    if (e instanceof TrainerFencedError) {
      fenced ??= e;
      state = 'fenced';
      detail = e.message;
    }
    throw e;
  } finally {
    clearInterval(hb);
    renewing = false;
    await server?.close();
    await beat();
    // The next trainer starts at once; a lease another took is theirs (release compares the epoch).
    await raw.releaseTrainerLease(o.runId).catch(() => undefined);
    await q.close();
    await raw.close();
  }
}
