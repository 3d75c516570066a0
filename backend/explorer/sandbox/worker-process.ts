// One sandbox worker process: spawns it with the isolation wrappers, frames its stdout into
// protocol messages (bounded line length), keeps the tail of its stderr (to recognise a V8 OOM),
// and reports its exit. The pool decides what a message or an exit means for a job.
import { spawn, type ChildProcess } from 'node:child_process';
import { parseWorkerLine, ProtocolError, type WorkerMessage } from './decode.js';
import { workerCommand } from './isolation.js';
import type { SandboxOptions } from './types.js';

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Workers never outlive the host, even when it exits without closing its pools.
  process.on('exit', () => {
    for (const c of live) killGroup(c);
  });
}

/**
 * A worker is the leader of its own process group (spawned detached), so that one signal reaches the
 * program inside a PID namespace too: `unshare -f` forks it, and its --kill-child (a parent-death
 * signal) is cleared when setpriv changes the user.
 */
function killGroup(c: ChildProcess): void {
  try {
    if (c.pid) return void process.kill(-c.pid, 'SIGKILL');
  } catch {
    // The group is gone already; the child itself below.
  }
  c.kill('SIGKILL');
}

export interface WorkerEvents {
  message(m: WorkerMessage): void;
  protocolError(e: ProtocolError): void;
  exit(code: number | null, signal: NodeJS.Signals | null): void;
}

export class WorkerProcess {
  readonly child: ChildProcess;
  readonly ready: Promise<number>;
  jobs = 0;
  exited = false;
  private buf = '';
  private stderrTail = '';
  private readonly maxLine: number;
  private events: WorkerEvents | null = null;

  constructor(opts: SandboxOptions) {
    installExitHook();
    this.maxLine = 4 * opts.maxOutputBytes + 8192;
    const t0 = performance.now();
    const { cmd, args } = workerCommand(opts);
    // Minimal environment, no inherited descriptors beyond the three pipes, cwd outside the project.
    this.child = spawn(cmd, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {},
      cwd: '/',
      windowsHide: true,
      detached: process.platform !== 'win32',
    });
    live.add(this.child);
    this.child.unref();
    for (const s of [this.child.stdin, this.child.stdout, this.child.stderr])
      (s as unknown as { unref?: () => void } | null)?.unref?.();
    this.child.stdin?.on('error', () => {}); // EPIPE after the worker died: the exit handler reports it
    this.ready = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill();
        reject(new Error(`sandbox worker not ready within ${opts.startupTimeoutMs} ms`));
      }, opts.startupTimeoutMs);
      this.events = {
        message: (m) => {
          clearTimeout(timer);
          if (m.t === 'ready') resolve(performance.now() - t0);
          else reject(new Error('sandbox worker spoke before it was ready'));
        },
        protocolError: (e) => {
          clearTimeout(timer);
          this.kill();
          reject(e);
        },
        exit: (code, signal) => {
          clearTimeout(timer);
          reject(
            new Error(
              `sandbox worker exited during start (code ${code}, signal ${signal}): ${this.stderrTail.slice(-300).trim()}`,
            ),
          );
        },
      };
    });
    this.ready.catch(() => {});
    this.child.on('error', (e) => {
      // Spawn failure (ENOENT, EAGAIN): no 'exit' follows in every case, so report it as one.
      this.stderrTail += `spawn error: ${e.message}`;
      this.onExit(null, null);
    });
    // 'close' (not 'exit'): stderr is fully read by then, which the OOM check needs.
    this.child.on('close', (code, signal) => this.onExit(code, signal));
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => this.onData(chunk));
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-4096);
    });
  }

  /** Who gets this worker's events from now on (the pool, once it is ready). */
  listen(events: WorkerEvents): void {
    this.events = events;
  }

  get stderr(): string {
    return this.stderrTail;
  }

  send(obj: unknown): void {
    this.child.stdin!.write(JSON.stringify(obj) + '\n');
  }

  kill(): void {
    if (!this.exited) killGroup(this.child);
  }

  /**
   * Workers are unref'd, so an idle pool never keeps the host alive; while a job runs (or the pool
   * waits for an exit) the worker is held, so the host waits for the result.
   */
  hold(): void {
    this.child.ref();
    for (const s of [this.child.stdout, this.child.stderr]) (s as unknown as { ref?: () => void } | null)?.ref?.();
  }

  release(): void {
    this.child.unref();
    for (const s of [this.child.stdout, this.child.stderr]) (s as unknown as { unref?: () => void } | null)?.unref?.();
  }

  private onData(chunk: string): void {
    if (this.exited) return;
    this.buf += chunk;
    let i: number;
    while ((i = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      if (line.length > this.maxLine) return this.fail(new ProtocolError('worker line over the size limit'));
      let m: WorkerMessage;
      try {
        m = parseWorkerLine(line);
      } catch (e) {
        return this.fail(e instanceof ProtocolError ? e : new ProtocolError(String(e)));
      }
      this.events?.message(m);
    }
    if (this.buf.length > this.maxLine) this.fail(new ProtocolError('worker line over the size limit'));
  }

  private fail(e: ProtocolError): void {
    this.buf = '';
    const ev = this.events;
    this.kill();
    ev?.protocolError(e);
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exited) return;
    this.exited = true;
    live.delete(this.child);
    this.events?.exit(code, signal);
  }
}
