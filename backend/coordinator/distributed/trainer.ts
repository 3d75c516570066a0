// `rft trainer --buffer postgres://... --run RUN`: the one trainer of a distributed run. Resumes
// from the newest checkpoint recorded in the buffer (its step) and the buffer position (the
// sampler's recorded batches), trains, publishes every sync_interval steps a checkpoint to its
// weights folder with its sha256 (served over HTTP from this host unless told not to), and NOTIFYs the explorers. Database faults are retried.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Task } from '../../core/types.js';
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
import { samplerConfig, stageBatchSize, stagesOf, trainerOptions } from '../setup.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { workflows } from '../../explorer/workflow.js';
import '../../explorer/workflows/index.js';
import { evaluate, type EvalResult } from '../evaluate.js';
import { MetricsLog, writeReport } from '../monitor.js';
import { runReward } from '../setup.js';
import { loadWorkspaceCode } from '../workspace-code.js';
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
  /** metrics.jsonl, report.html and summary.json (default: the run's folder next to its weights, WEIGHTS/RUN). */
  outDir?: string;
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
    const outDir = o.outDir ?? join(weightsDir, o.runId);
    const stage = stagesOf(cfg)[0]!;
    const latest = await store.latestCheckpoint(o.runId);
    if (!latest) throw new Error(`run ${o.runId}: no checkpoint in ${store.location} to start from`);
    // The trainer resumes from its own disk: the folder `rft coordinator --weights` wrote v0 into.
    if (!existsSync(latest.path))
      throw new Error(`run ${o.runId}: v${latest.version} is at ${latest.path}, which this machine does not have: run \`rft trainer\` on the machine where \`rft coordinator --weights ${weightsDir}\` ran (or share that folder at the same path)`);
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
    // Under LoRA the reference is the frozen base without adapters (a view: no second copy).
    const reference = objective.needsReference ? (model.lora ? model.base() : loadVerified((await store.listCheckpoints(o.runId))[0]!.path, '').model) : undefined;
    const trainer = new Trainer(model, objective, trainerOptions(cfg, stage, tok.padId), reference);
    // Scoped by run: another run in the same database is never sampled nor its recorded batches replayed.
    const sCfg = samplerConfig(stage.algorithm.name, stage.algorithm.params, cfg, o.runId);
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
    // The run's record on this host, as a local run keeps it: metrics.jsonl (one line per step, the
    // evaluations), report.html and summary.json at the end.
    mkdirSync(outDir, { recursive: true });
    const metrics = new MetricsLog(join(outDir, 'metrics.jsonl'));
    if (meta.version === 0) metrics.write({ kind: 'stage', stage: stage.name, algorithm: objective.name, distributed: true });
    const evalTasks = (await store.getState<Task[]>(o.runId, 'dist:eval')) ?? [];
    await loadWorkspaceCode(cfg); // workflow.file: trusted by RFT_TRUST_WORKSPACE_CODE=1
    const reward = runReward(cfg);
    const evalNow = async (label: string, v: number): Promise<EvalResult | null> => {
      if (!evalTasks.length) return null;
      state = 'evaluating';
      detail = `${label}: ${evalTasks.length} task(s) with v${v}`;
      const r = await evaluate(new LocalRolloutModel(model, tok, v), evalTasks, reward, { maxNewTokens: cfg.explorer.eval_sampling.max_new_tokens, workflow: workflows.get(cfg.workflow.name) });
      metrics.write({ kind: 'eval', stage: label, step: v, ...r });
      log.info(`eval ${label} (v${v}): accuracy ${r.accuracy.toFixed(3)}, mean reward ${r.mean_reward.toFixed(3)} over ${r.n} task(s)`);
      return r;
    };
    // The starting weights are evaluated once per run (a restarted trainer does not repeat it).
    let evalStart: EvalResult | null = null;
    if (meta.version === 0 && (await store.getState(o.runId, 'dist:eval_start')) === null) {
      evalStart = await evalNow('start', 0);
      await store.setState(o.runId, 'dist:eval_start', evalStart ?? { n: 0 });
    } else evalStart = await store.getState<EvalResult>(o.runId, 'dist:eval_start');
    // Every step goes to metrics.jsonl; the log gets a line per step at most every 5 s (and the last).
    let logged = 0;
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
        if (rec.kind !== 'train') return metrics.write({ stage: stage.name, ...rec });
        steps++;
        const usual = sampler.last.filter((e) => e.source === 'usual');
        const rewardMean = usual.length ? usual.reduce((a, e) => a + e.reward, 0) / usual.length : null;
        metrics.write({ stage: stage.name, ...rec, reward_mean: rewardMean, full_reward: usual.length ? usual.filter((e) => e.reward >= 1).length / usual.length : null });
        const n = Number(rec.step) + 1;
        if (Date.now() - logged >= 5000 || (stage.steps !== undefined && n >= stage.steps)) {
          logged = Date.now();
          log.info(`step ${n}/${stage.steps}: loss ${Number(rec.loss).toFixed(4)}, batch reward ${rewardMean === null ? '-' : rewardMean.toFixed(3)}, waited ${Number(rec.waited_s).toFixed(2)} s`);
        }
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
    // Explorers stop on dist:done; the final evaluation runs after it, on a quiet machine.
    if (r.stageDone) await store.setState(o.runId, 'dist:done', { step: r.step, at: Date.now() });
    const evalFinal = r.stageDone ? await evalNow('final', r.step) : null;
    state = r.stageDone ? 'done' : 'stopped';
    detail = '';
    log.info(`run ${o.runId}: ${state} at step ${r.step}, idle ${(r.idle * 100).toFixed(1)}%, ${sampler.topUps} top-up job(s)`);
    trainer.dispose();
    reference?.dispose();
    model.dispose();
    const result: TrainerResult = { worker: id, startedFrom: meta.version, step: r.step, done: r.stageDone, idle: r.idle, wallS: (Date.now() - t0) / 1000, topUps: sampler.topUps, eval: { start: evalStart, final: evalFinal }, outDir };
    if (r.stageDone) {
      const summary = { run_id: o.runId, distributed: true, base_accuracy: evalStart?.accuracy ?? null, final_accuracy: evalFinal?.accuracy ?? null, trainer_steps: r.step, top_ups: sampler.topUps, checkpoint: versionDir(weightsDir, o.runId, r.step) };
      writeFileSync(join(outDir, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
      writeReport(join(outDir, 'report.html'), `RFT Studio distributed run ${o.runId}`, metrics.read(), summary);
    }
    return result;
  } finally {
    clearInterval(hb);
    await server?.close();
    await beat();
    await q.close();
    await raw.close();
  }
}
