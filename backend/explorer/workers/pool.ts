// Rollout workers: N worker threads, each with its own tfjs engine and its own copy of the weights,
// behind the RolloutModel interface so every workflow can use them unchanged. A generate() call is
// split into one job per worker; a job that times out or whose worker dies is retried on a fresh
// worker (bounded), and after the last retry its samples come back as infra failures (never as
// empty answers). New weights are sent by version: a worker gets the current version before its
// next job. Samples that fall into a loop are cut by repeat detection (repeat.ts).
import { InfrastructureError, InputError } from '../../core/errors.js';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { logger } from '../../core/log.js';
import { fromSource, packageFile } from '../../core/package-root.js';
import type { ModelConfig } from '../../model/config.js';
import type { BackendName } from '../../model/engine.js';
import type { GenerateOptions } from '../../model/generate.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import { tokenizerTransfer } from '../../model/tokenizer/transfer.js';
import type { Transformer } from '../../model/transformer.js';
import { DEFAULT_REPEAT, type RepeatOptions } from '../repeat.js';
import type { RolloutGeneration, RolloutModel } from '../workflow.js';
import type { FromWorker, GenJobOptions, ToWorker, WeightTensor } from './protocol.js';

const log = logger('rollout-workers');

export interface WorkerPoolOptions {
  workers: number;
  config: ModelConfig;
  tokenizer: Tokenizer;
  /** tfjs backend of the workers (default: the engine's usual choice). */
  backend?: BackendName;
  /** A job running longer than this is abandoned (its worker is replaced) and retried. */
  taskTimeoutMs?: number;
  /** Retries of a failed job before its samples are infra failures. */
  maxRetries?: number;
  /** null turns repeat detection off. */
  repeat?: RepeatOptions | null;
  /** Fault injection (tests): the first `hang` jobs hang, the next `crash` jobs kill their worker. */
  faults?: { hang?: number; crash?: number };
}

/** Cumulative counters and per-stage times (seconds) since the pool started. */
export interface RolloutMetrics {
  workers: number;
  jobs: number;
  samples: number;
  tokens: number;
  retries: number;
  timeouts: number;
  crashes: number;
  infra_failures: number;
  repeats_cut: number;
  /** Time jobs waited for a free worker. */
  queue_wait_s: number;
  /** Time the workers spent generating (summed over workers). */
  generate_s: number;
  /** Time to read the weights out of the trainer's model and post them. */
  weight_sync_s: number;
  /** Time the workers spent loading weights (summed). */
  weight_load_s: number;
  /** Wall time spent inside generate() calls. */
  wall_s: number;
}

interface Job {
  id: number;
  prompts: number[][];
  opts: GenJobOptions;
  attempts: number;
  queuedAt: number;
  resolve: (g: RolloutGeneration[]) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  version: number;
  job: Job | null;
  timer?: NodeJS.Timeout;
  dead: boolean;
}

function startWorker(): Worker {
  // The bundles ship dist/backend/rollout-worker.mjs (scripts/build.mjs). Under tsx (dev, tests) the sources are .ts,
  // and Node 20 does not apply the parent's --import hooks to a worker's entry module, so a small
  // bootstrap registers tsx in the worker first.
  if (!fromSource) return new Worker(packageFile('dist', 'backend', 'rollout-worker.mjs'));
  const entry = pathToFileURL(packageFile('backend', 'explorer', 'workers', 'rollout-worker.ts')).href;
  // tsx resolved here: an eval worker resolves bare names from the process's working folder, which is the user's workspace.
  const tsx = import.meta.resolve('tsx/esm/api');
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); }).catch((e) => { throw e; });`;
  return new Worker(boot, { eval: true });
}

export class WorkerRolloutModel implements RolloutModel {
  version = -1;
  readonly tokenizer: Tokenizer;
  readonly maxSeqLen: number;
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private weights?: { version: number; tensors: Record<string, WeightTensor> };
  private nextJob = 0;
  private faultHang: number;
  private faultCrash: number;
  private closed = false;
  /** A worker could not start (bad config, engine missing): every job fails with this. */
  private initError?: string;
  private readonly m: RolloutMetrics;

  constructor(private readonly opts: WorkerPoolOptions) {
    if (!Number.isInteger(opts.workers) || opts.workers < 1)
      throw new InputError(`rollout workers: workers must be a positive integer, got ${opts.workers}`);
    this.tokenizer = opts.tokenizer;
    this.maxSeqLen = opts.config.maxSeqLen;
    this.faultHang = opts.faults?.hang ?? 0;
    this.faultCrash = opts.faults?.crash ?? 0;
    this.m = {
      workers: opts.workers,
      jobs: 0,
      samples: 0,
      tokens: 0,
      retries: 0,
      timeouts: 0,
      crashes: 0,
      infra_failures: 0,
      repeats_cut: 0,
      queue_wait_s: 0,
      generate_s: 0,
      weight_sync_s: 0,
      weight_load_s: 0,
      wall_s: 0,
    };
    for (let i = 0; i < opts.workers; i++) this.slots.push(this.spawn());
  }

  metrics(): RolloutMetrics {
    return { ...this.m };
  }

  /** Wait until every worker has its engine up (optional: jobs wait for it anyway). */
  async ready(): Promise<void> {
    while (!this.slots.every((s) => s.ready)) {
      if (this.initError) throw new InfrastructureError(this.initError);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Publish new weights; each worker loads them before its next job. */
  async setWeights(model: Transformer, version: number): Promise<void> {
    const t0 = performance.now();
    const tensors: Record<string, WeightTensor> = {};
    for (const name of model.weightNames()) {
      // LoRA adapters merged in: the workers' models are plain (and hold every weight in their heap).
      const w = model.effectiveWeight(name);
      tensors[name] = { shape: [...w.shape], data: (await w.data()) as Float32Array };
      if (w !== model.params.get(name)) w.dispose();
    }
    this.weights = { version, tensors };
    this.version = version;
    // Idle ready workers get them now, so the next generate() does not pay for the copy.
    for (const s of this.slots) if (s.ready && !s.job) this.sendWeights(s);
    this.m.weight_sync_s += (performance.now() - t0) / 1000;
  }

  async generate(prompts: number[][], opts: GenerateOptions): Promise<RolloutGeneration[]> {
    if (this.closed) throw new Error('rollout workers are closed');
    if (!this.weights) throw new Error('rollout workers: setWeights() before generate()');
    if (prompts.length === 0) return [];
    const t0 = performance.now();
    const n = Math.min(prompts.length, this.slots.length);
    const prefix = opts.prefix
      ? { shape: opts.prefix.shape as [number, number, number], data: (await opts.prefix.data()) as Float32Array }
      : undefined;
    const { prefix: _p, ...rest } = opts;
    const jobs: Promise<RolloutGeneration[]>[] = [];
    let start = 0;
    for (let c = 0; c < n; c++) {
      const size = Math.floor(prompts.length / n) + (c < prompts.length % n ? 1 : 0);
      const idx = [start, start + size];
      start += size;
      const jobOpts: GenJobOptions = { ...rest, seed: (opts.seed ?? 0) + c * 1_000_003 };
      if (prefix) {
        const [, P, D] = prefix.shape;
        jobOpts.prefix = { shape: [size, P, D], data: prefix.data.slice(idx[0]! * P * D, idx[1]! * P * D) };
      }
      jobs.push(
        new Promise((resolve) =>
          this.enqueue({
            id: this.nextJob++,
            prompts: prompts.slice(idx[0], idx[1]),
            opts: jobOpts,
            attempts: 0,
            queuedAt: performance.now(),
            resolve,
          }),
        ),
      );
    }
    const out = (await Promise.all(jobs)).flat();
    this.m.wall_s += (performance.now() - t0) / 1000;
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) this.fail(job, 'rollout workers closed');
    await Promise.all(this.slots.map((s) => this.kill(s)));
  }

  private spawn(): Slot {
    const worker = startWorker();
    const slot: Slot = { worker, ready: false, version: -1, job: null, dead: false };
    worker.on('message', (m: FromWorker) => this.onMessage(slot, m));
    worker.on('error', (e) => this.onDeath(slot, `worker error: ${e.message}`));
    worker.on('exit', (code) => this.onDeath(slot, `worker exited with code ${code}`));
    const init: ToWorker = {
      type: 'init',
      config: this.opts.config,
      tokenizer: tokenizerTransfer(this.opts.tokenizer),
      backend: this.opts.backend,
    };
    worker.postMessage(init);
    return slot;
  }

  private sendWeights(s: Slot): void {
    if (!this.weights || s.version === this.weights.version) return;
    s.worker.postMessage({
      type: 'weights',
      version: this.weights.version,
      tensors: this.weights.tensors,
    } satisfies ToWorker);
    s.version = this.weights.version;
  }

  private enqueue(job: Job): void {
    if (this.initError) return this.fail(job, this.initError);
    this.queue.push(job);
    this.dispatch();
  }

  private dispatch(): void {
    for (const s of this.slots) {
      if (this.queue.length === 0) return;
      if (!s.ready || s.job || s.dead) continue;
      const job = this.queue.shift()!;
      this.sendWeights(s);
      s.job = job;
      this.m.queue_wait_s += (performance.now() - job.queuedAt) / 1000;
      let fault: 'hang' | 'crash' | undefined;
      if (this.faultHang > 0) {
        this.faultHang--;
        fault = 'hang';
      } else if (this.faultCrash > 0) {
        this.faultCrash--;
        fault = 'crash';
      }
      const msg: ToWorker = {
        type: 'generate',
        job: job.id,
        version: s.version,
        prompts: job.prompts,
        opts: job.opts,
        repeat: this.opts.repeat === null ? null : (this.opts.repeat ?? DEFAULT_REPEAT),
        fault,
      };
      s.worker.postMessage(msg);
      const timeout = this.opts.taskTimeoutMs ?? 120_000;
      s.timer = setTimeout(() => {
        this.m.timeouts++;
        this.retry(s, `timed out after ${timeout} ms`);
      }, timeout);
    }
  }

  private onMessage(s: Slot, m: FromWorker): void {
    if (m.type === 'ready') {
      s.ready = true;
      this.dispatch();
    } else if (m.type === 'weights_loaded') {
      this.m.weight_load_s += m.ms / 1000;
    } else if (m.type === 'result') {
      const job = s.job;
      if (!job || job.id !== m.job) return; // a late answer to an abandoned job
      clearTimeout(s.timer);
      s.job = null;
      this.m.jobs++;
      this.m.samples += m.generations.length;
      this.m.tokens += m.generations.reduce((a, g) => a + g.tokens.length, 0);
      this.m.generate_s += m.ms / 1000;
      this.m.repeats_cut += m.repeats;
      job.resolve(m.generations);
      this.dispatch();
    } else if (m.type === 'error' && !s.ready) {
      // Starting a worker failed: retrying would fail the same way.
      this.initError = m.message.split('\n')[0] ?? 'worker failed to start';
      for (const job of this.queue.splice(0)) this.fail(job, this.initError);
    } else if (m.type === 'error') {
      log.warn('rollout worker error', { message: m.message.split('\n')[0] ?? '' });
      if (s.job && m.job === s.job.id) this.retry(s, m.message.split('\n')[0] ?? 'error');
    }
  }

  private onDeath(s: Slot, reason: string): void {
    if (s.dead) return;
    s.dead = true;
    if (this.closed) return;
    if (!s.ready) {
      // It died while starting: a respawn would die the same way.
      this.initError = `rollout worker failed to start: ${reason}`;
      for (const job of this.queue.splice(0)) this.fail(job, this.initError);
      return;
    }
    this.m.crashes++;
    if (s.job) this.retry(s, reason);
    else this.replace(s);
  }

  /** The slot's worker failed its job: replace the worker, then retry the job or give up on it. */
  private retry(s: Slot, reason: string): void {
    const job = s.job;
    clearTimeout(s.timer);
    s.job = null;
    this.replace(s);
    if (!job) return;
    job.attempts++;
    if (job.attempts <= (this.opts.maxRetries ?? 2)) {
      this.m.retries++;
      log.warn(`rollout job ${job.id} failed (${reason}); retry ${job.attempts}`);
      job.queuedAt = performance.now();
      this.queue.unshift(job);
      this.dispatch();
    } else {
      this.fail(job, `${reason} (after ${job.attempts} attempts)`);
    }
  }

  private fail(job: Job, reason: string): void {
    this.m.infra_failures += job.prompts.length;
    job.resolve(
      job.prompts.map(() => ({
        tokens: [],
        text: '',
        logprobs: [],
        finishReason: 'error' as const,
        infraError: reason,
      })),
    );
  }

  private replace(s: Slot): void {
    const i = this.slots.indexOf(s);
    void this.kill(s);
    if (i >= 0 && !this.closed) this.slots[i] = this.spawn();
  }

  private async kill(s: Slot): Promise<void> {
    s.dead = true;
    clearTimeout(s.timer);
    s.worker.removeAllListeners('exit');
    s.worker.removeAllListeners('error');
    await s.worker.terminate();
  }
}
