// `rft trainer --buffer postgres://... --run RUN`: the one trainer of a distributed run. Resumes
// from the newest checkpoint recorded in the buffer (its step) and the buffer position (the
// sampler's recorded batches), trains, publishes every sync_interval steps a checkpoint to its
// weights folder with its sha256 (served over HTTP from this host unless told not to), and NOTIFYs the explorers. Database faults are retried.
import { existsSync } from 'node:fs';
import { logger } from '../../core/log.js';
import { initEngine } from '../../model/engine.js';
import { saveCheckpoint } from '../../model/checkpoint.js';
import { PostgresStore } from '../../buffer/storage/postgres.js';
import { makeSampler } from '../../buffer/sampler/index.js';
import { JobQueue, workerId } from '../../buffer/queue/job-queue.js';
import { reconnecting, withRetry } from '../../buffer/queue/retry.js';
import { Trainer } from '../../trainer/trainer.js';
import { makeObjective } from '../../trainer/objectives.js';
import { runTrainerLoop } from '../../trainer/worker.js';
import { samplerConfig, stageBatchSize, trainerOptions } from '../run.js';
import { stagesOf } from '../worker-context.js';
import { readDistributedConfig } from './explorer.js';
import { FeedingSampler } from './feeding-sampler.js';
import { checksumDir, loadVerified, pruneVersions, versionDir } from './weights.js';
import { defaultAdvertisedHost, WeightsServer } from './weights-http.js';

const log = logger('dist-trainer');

export interface TrainerOptions {
  url: string;
  runId: string;
  signal?: AbortSignal;
  heartbeatMs?: number;
  /**
   * Serve the published weights over HTTP (default; port 0 = any free port, host = the address
   * explorers reach this machine at, default its first non-loopback IPv4), or false: explorers read
   * the weights folder, which must then be shared at the same path on every machine.
   */
  serveWeights?: { port?: number; host?: string } | false;
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
}

export async function distributedTrainer(o: TrainerOptions): Promise<TrainerResult> {
  await initEngine();
  const t0 = Date.now();
  const retry = { signal: o.signal };
  const raw = await withRetry(() => PostgresStore.open(o.url), retry);
  const store = reconnecting(raw, retry);
  const q = await withRetry(() => JobQueue.open(o.url), retry);
  const id = workerId('trainer');
  let state = 'starting';
  let detail = '';
  let version: number | null = null;
  let steps = 0;
  const beat = () => {
    const span = (Date.now() - t0) / 1000;
    return q.heartbeat(o.runId, { id, role: 'trainer', state, detail, modelVersion: version, done: steps, throughput: span > 0 ? steps / span : 0, startedAt: t0 }).catch(() => undefined);
  };
  await beat(); // a worker shows up as soon as it joins
  const hb = setInterval(() => void beat(), o.heartbeatMs ?? 1000);
  let server: WeightsServer | null = null;
  try {
    const cfg = await readDistributedConfig(() => store.getState(o.runId, 'dist:config'), `run ${o.runId}`);
    const weightsDir = await store.getState<string>(o.runId, 'dist:weights');
    if (!weightsDir) throw new Error(`run ${o.runId}: no weights folder recorded`);
    const stage = stagesOf(cfg)[0]!;
    const latest = await store.latestCheckpoint(o.runId);
    if (!latest) throw new Error(`run ${o.runId}: no checkpoint in ${store.location} to start from`);
    const { model, meta, tokenizer: tok } = loadVerified(latest.path, latest.checksum);
    // Weights over HTTP from this host: explorers need no shared folder. Recorded in the run, so every
    // explorer finds the current address (a restarted trainer records its new one).
    if (o.serveWeights !== false) {
      server = new WeightsServer();
      for (const c of await store.listCheckpoints(o.runId)) if (existsSync(c.path)) server.add(c.checksum, c.path);
      const port = await server.listen(o.serveWeights?.port ?? 0);
      const host = o.serveWeights?.host ?? defaultAdvertisedHost();
      const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
      await store.setState(o.runId, 'dist:weights-http', { url, token: server.token, trainer: id });
      log.info(`run ${o.runId}: serving weights at ${url}`);
    } else await store.setState(o.runId, 'dist:weights-http', null);
    if (!tok) throw new Error(`${latest.path}: checkpoint has no tokenizer.json`);
    const step = typeof meta.step === 'number' ? meta.step : meta.version;
    version = step;
    const stageStep = meta.stage_index === 1 ? (stage.steps ?? step) : typeof meta.stage_step === 'number' ? meta.stage_step : step;
    const objective = makeObjective(stage.algorithm.name, stage.algorithm.params);
    const reference = objective.needsReference ? loadVerified((await store.listCheckpoints(o.runId))[0]!.path, '').model : undefined;
    const trainer = new Trainer(model, objective, trainerOptions(cfg, stage, tok.padId), reference);
    // Scoped by run: another run in the same database is never sampled nor its recorded batches replayed.
    const sCfg = { ...samplerConfig(stage.algorithm.name, stage.algorithm.params, cfg), runId: o.runId };
    const groupSize = cfg.explorer.repeat_times;
    const batchSize = await stageBatchSize(store, sCfg, true, cfg.trainer.batch_size, cfg.explorer.tasks_per_step * groupSize);
    const plan = {
      tasks: await store.listTasks(o.runId),
      seed: cfg.seed,
      selector: cfg.taskset.selector,
      tasksPerStep: cfg.explorer.tasks_per_step,
      sync: { interval: cfg.synchronizer.sync_interval, offset: cfg.synchronizer.sync_offset, stageStartVersion: 0 },
    };
    const sampler = new FeedingSampler(makeSampler(store, sCfg), q, o.runId, plan, groupSize);
    log.info(`run ${o.runId}: training from v${meta.version} (step ${stageStep} of ${stage.steps}), batch ${batchSize}`);
    const r = await runTrainerLoop({
      trainer,
      sampler,
      batchSize,
      step,
      stageStep,
      steps: stage.steps,
      syncInterval: cfg.synchronizer.sync_interval,
      signal: o.signal,
      onMetrics: (rec) => {
        if (rec.kind === 'train') steps++;
      },
      onState: (s, d) => {
        state = s;
        detail = d ?? '';
      },
      publish: async (v, sStep, done) => {
        const dir = versionDir(weightsDir, o.runId, v);
        await saveCheckpoint(model, dir, { version: v, step: v, stage: stage.name, stage_index: done ? 1 : 0, stage_step: sStep }, tok);
        const checksum = checksumDir(dir);
        server?.add(checksum, dir); // servable before any explorer hears of it
        await store.addCheckpoint({ runId: o.runId, version: v, path: dir, checksum, createdAt: Date.now() });
        version = v;
        await withRetry(() => q.notifyWeights(o.runId, v), retry);
        pruneVersions(weightsDir, o.runId, v, cfg.buffer.max_staleness + 3);
      },
    });
    if (r.stageDone) await store.setState(o.runId, 'dist:done', { step: r.step, at: Date.now() });
    state = r.stageDone ? 'done' : 'stopped';
    log.info(`run ${o.runId}: ${state} at step ${r.step}, idle ${(r.idle * 100).toFixed(1)}%, ${sampler.topUps} top-up job(s)`);
    trainer.dispose();
    reference?.dispose();
    model.dispose();
    return { worker: id, startedFrom: meta.version, step: r.step, done: r.stageDone, idle: r.idle, wallS: (Date.now() - t0) / 1000, topUps: sampler.topUps };
  } finally {
    clearInterval(hb);
    await server?.close();
    await beat();
    await q.close();
    await raw.close();
  }
}
