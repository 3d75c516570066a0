// A pool of reused sandbox worker processes with a queue and per-job timeouts.
//
// How a user-code failure is told apart from a sandbox failure:
// - The worker acknowledges each job ("start") before it runs any of it. Anything that goes wrong
//   after the acknowledgement and before "done" is caused by the job's code: a vm timeout or the
//   host's wall-clock SIGKILL -> timeout; death with V8's heap-limit message -> memory; any other
//   death -> crash. All are status ok (a normal low reward), and the worker is replaced.
// - Anything else is the sandbox's own failure, status infra_failure: a worker that cannot be
//   spawned or does not become ready, a job that is not acknowledged (the job is retried once on a
//   fresh worker first), a protocol violation (malformed or oversized line: the harness never
//   produces one, so it means the sandbox is broken or was escaped), the pool closed or the call
//   aborted, the queue full.
import { logger } from '../../core/log.js';
import type { ProtocolError, WorkerMessage } from './decode.js';
import { isolationLayers, probeIsolation } from './isolation.js';
import {
  DEFAULT_SANDBOX_OPTIONS,
  type IsolationLayers,
  type RunKind,
  type SandboxJob,
  type SandboxOptions,
  type SandboxResult,
} from './types.js';
import { WorkerProcess } from './worker-process.js';

const log = logger('sandbox');

interface Pending {
  job: SandboxJob;
  resolve: (r: SandboxResult) => void;
  t0: number;
  retries: number;
  signal?: AbortSignal;
  onAbort?: () => void;
}

interface Running {
  id: number;
  p: Pending;
  started: boolean;
  killedForTimeout: boolean;
  timer: NodeJS.Timeout;
}

export class SandboxPool {
  readonly opts: SandboxOptions;
  readonly isolation: IsolationLayers;
  /** Start-to-ready time of every worker started so far (ms). */
  readonly startupMs: number[] = [];
  private readonly idle: WorkerProcess[] = [];
  private readonly workers = new Set<WorkerProcess>();
  private readonly running = new Map<WorkerProcess, Running>();
  private readonly queue: Pending[] = [];
  private starting = 0;
  private closed = false;
  private nextId = 1;
  private startFailures = 0;

  constructor(opts: Partial<SandboxOptions> = {}) {
    this.opts = { ...DEFAULT_SANDBOX_OPTIONS, ...opts };
    this.isolation = isolationLayers(this.opts);
    if (!this.isolation.permissionFlag) log.error('Node has no permission model: the sandbox refuses to run code');
    else if (this.isolation.network === 'none')
      log.warn('no network namespace available: network isolation relies on the vm context alone');
    if (this.isolation.permissionFlag && !this.isolation.pids.startsWith('own'))
      log.warn(
        `no PID namespace for the sandbox: ${this.isolation.pids}; code that escaped the vm could see the host's processes and signal those of its user`,
      );
  }

  /** Starts every worker now (otherwise they start on demand); resolves when all are ready. */
  async warm(): Promise<void> {
    // `workers` already counts the ones still starting
    while (this.workers.size < this.opts.workers) if (!this.spawnWorker()) break;
    await Promise.all([...this.workers].map((w) => w.ready.catch(() => undefined)));
  }

  run(job: SandboxJob, signal?: AbortSignal): Promise<SandboxResult> {
    const t0 = performance.now();
    if (this.closed) return Promise.resolve(infra('sandbox pool is closed', t0));
    if (!probeIsolation().permissionFlag) return Promise.resolve(infra('Node permission model unavailable', t0));
    if (signal?.aborted) return Promise.resolve(infra('aborted', t0));
    if (this.queue.length >= this.opts.maxQueue) return Promise.resolve(infra('sandbox queue full', t0));
    return new Promise<SandboxResult>((resolve) => {
      const p: Pending = { job, resolve, t0, retries: 0, signal };
      if (signal) {
        p.onAbort = () => this.abort(p);
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      this.queue.push(p);
      this.pump();
    });
  }

  /** Kills every worker; queued and running jobs end as infra failures. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.queue.splice(0)) this.finish(p, infra('sandbox pool is closed', p.t0));
    const exits = [...this.workers].map(
      (w) => new Promise<void>((res) => (w.exited ? res() : w.child.once('close', () => res()))),
    );
    for (const w of this.workers) {
      w.hold();
      w.kill();
    }
    await Promise.all(exits);
  }

  get size(): number {
    return this.workers.size;
  }

  private pump(): void {
    while (this.queue.length && this.idle.length) {
      const w = this.idle.pop()!;
      this.dispatch(w, this.queue.shift()!);
    }
    while (this.queue.length > this.starting && this.workers.size < this.opts.workers) {
      if (!this.spawnWorker()) break;
    }
  }

  private spawnWorker(): WorkerProcess | null {
    if (this.closed) return null;
    let w: WorkerProcess;
    this.starting++;
    try {
      w = new WorkerProcess(this.opts);
    } catch (e) {
      this.starting--;
      this.startFailed(`cannot spawn a sandbox worker: ${(e as Error).message}`);
      return null;
    }
    this.workers.add(w);
    w.ready.then(
      (ms) => {
        this.starting--;
        this.startFailures = 0;
        this.startupMs.push(ms);
        w.listen({
          message: (m) => this.onMessage(w, m),
          protocolError: (e) => this.onProtocolError(w, e),
          exit: (code, signal) => this.onExit(w, code, signal),
        });
        if (this.closed) return w.kill();
        this.idle.push(w);
        this.pump();
      },
      (e: Error) => {
        this.starting--;
        this.workers.delete(w);
        w.kill();
        this.startFailed(e.message);
      },
    );
    return w;
  }

  /** A worker could not start: the queued jobs cannot run, which is the sandbox's failure. */
  private startFailed(reason: string): void {
    this.startFailures++;
    log.warn('sandbox worker failed to start', { reason, failures: this.startFailures });
    // With no healthy worker left, fail what waits instead of retrying forever.
    if (this.workers.size === 0 || this.startFailures >= 3) {
      for (const p of this.queue.splice(0)) this.finish(p, infra(reason, p.t0));
    } else this.pump();
  }

  private dispatch(w: WorkerProcess, p: Pending): void {
    const id = this.nextId++;
    const timeoutMs = p.job.timeoutMs ?? this.opts.timeoutMs;
    // Until the worker acknowledges, a silent worker is the sandbox's fault (e.g. stuck).
    const timer = setTimeout(() => this.onAckTimeout(w), this.opts.ackTimeoutMs);
    this.running.set(w, { id, p, started: false, killedForTimeout: false, timer });
    w.hold();
    w.send({
      id,
      code: String(p.job.code),
      entryPoint: p.job.entryPoint ?? null,
      args: p.job.args ?? null,
      timeoutMs,
      maxOutputBytes: this.opts.maxOutputBytes,
    });
  }

  private onMessage(w: WorkerProcess, m: WorkerMessage): void {
    const r = this.running.get(w);
    if (!r) return this.onProtocolError(w, new Error(`unexpected '${m.t}' from an idle worker`) as ProtocolError);
    if (m.t === 'start' && m.id === r.id && !r.started) {
      r.started = true;
      clearTimeout(r.timer);
      const timeoutMs = r.p.job.timeoutMs ?? this.opts.timeoutMs;
      r.timer = setTimeout(() => {
        // The vm timeout did not stop it (async loop, blocking call): kill the process.
        r.killedForTimeout = true;
        w.kill();
      }, timeoutMs + this.opts.killGraceMs);
      return;
    }
    if (m.t === 'done' && m.id === r.id && r.started) {
      clearTimeout(r.timer);
      this.running.delete(w);
      w.release();
      w.jobs++;
      this.finish(r.p, {
        status: 'ok',
        kind: m.kind,
        calls: m.calls,
        value: m.value,
        error: m.error,
        logs: m.logs,
        logsTruncated: m.logsTruncated,
        ms: performance.now() - r.p.t0,
      });
      if (w.jobs >= this.opts.maxJobsPerWorker || this.closed) this.retire(w);
      else {
        this.idle.push(w);
        this.pump();
      }
      return;
    }
    this.onProtocolError(w, new Error(`out-of-order '${m.t}' message`) as ProtocolError);
  }

  private onProtocolError(w: WorkerProcess, e: Error): void {
    log.error('sandbox protocol violation', { error: e.message });
    const r = this.running.get(w);
    this.running.delete(w);
    this.retire(w);
    if (r) {
      clearTimeout(r.timer);
      this.finish(r.p, infra(`sandbox protocol broken: ${e.message}`, r.p.t0));
    }
  }

  private onAckTimeout(w: WorkerProcess): void {
    const r = this.running.get(w);
    this.running.delete(w);
    this.retire(w);
    if (r) this.retry(r.p, 'sandbox worker did not accept the job');
  }

  private onExit(w: WorkerProcess, code: number | null, signal: NodeJS.Signals | null): void {
    const r = this.running.get(w);
    this.running.delete(w);
    this.retire(w);
    if (!r) return;
    clearTimeout(r.timer);
    if (this.closed) return this.finish(r.p, infra('sandbox pool was shut down', r.p.t0));
    if (!r.started)
      return this.retry(r.p, `sandbox worker died before the job started (code ${code}, signal ${signal})`);
    // Started: the job's own code brought the worker down.
    let kind: RunKind = 'crash';
    if (r.killedForTimeout || signal === 'SIGXCPU') kind = 'timeout';
    // V8 prints these before it aborts; the code cannot write to stderr, so it cannot fake them.
    else if (/out of memory|Reached heap limit|allocation failed/i.test(w.stderr)) kind = 'memory';
    const error =
      kind === 'timeout' ? 'killed after the wall-clock timeout' : `worker died (code ${code}, signal ${signal})`;
    this.finish(r.p, {
      status: 'ok',
      kind,
      calls: [],
      value: null,
      error,
      logs: '',
      logsTruncated: false,
      ms: performance.now() - r.p.t0,
    });
  }

  private retry(p: Pending, reason: string): void {
    if (p.retries >= 1 || this.closed) return this.finish(p, infra(reason, p.t0));
    p.retries++;
    this.queue.unshift(p);
    this.pump();
  }

  private retire(w: WorkerProcess): void {
    const i = this.idle.indexOf(w);
    if (i >= 0) this.idle.splice(i, 1);
    if (this.workers.delete(w)) w.kill();
    if (!this.closed) this.pump();
  }

  private abort(p: Pending): void {
    const qi = this.queue.indexOf(p);
    if (qi >= 0) {
      this.queue.splice(qi, 1);
      return this.finish(p, infra('aborted', p.t0));
    }
    for (const [w, r] of this.running) {
      if (r.p === p) {
        clearTimeout(r.timer);
        this.running.delete(w);
        this.retire(w);
        this.finish(p, infra('aborted', p.t0));
      }
    }
  }

  private finish(p: Pending, r: SandboxResult): void {
    if (p.signal && p.onAbort) p.signal.removeEventListener('abort', p.onAbort);
    p.resolve(r);
  }
}

function infra(reason: string, t0: number): SandboxResult {
  return { status: 'infra_failure', reason, ms: performance.now() - t0 };
}
