// Child processes of a run (`placement: checkpoint`): the coordinator starts `rft explorer-process`
// and `rft trainer-process`, keeps the tail of their logs (also written to <run>/logs/<name>.log),
// reports a process that died with its last log lines, and restarts it up to `restart` times.
import { InfrastructureError, InputError } from '../core/errors.js';
import { DiskFullError, isDiskFull } from '../core/disk-full.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { logger } from '../core/log.js';
import { cliNodeArgs } from '../core/package-root.js';

const log = logger('processes');

/** The command that runs the `rft` CLI this process runs from (TypeScript source through tsx, or the bundle). */
export const cliCommand = cliNodeArgs;

export class ProcessDiedError extends InfrastructureError {
  constructor(
    readonly component: string,
    readonly code: number | null,
    readonly signal: NodeJS.Signals | null,
    readonly lastLines: string[],
  ) {
    super(
      `${component} process died (${signal ? `signal ${signal}` : `exit code ${code}`}); last log lines:\n  ${lastLines.join('\n  ') || '(none)'}`,
    );
    this.name = 'ProcessDiedError';
  }
}

/** A process's exit status for a refusal of its config or data (cli/commands/process-flags.ts refusedExit). */
export const EXIT_REFUSED = 3;

/** A process refused the run (its config or data): not restarted, since it would refuse again; the run fails as a refusal. */
export class ProcessRefusedError extends InputError {
  constructor(
    readonly component: string,
    lastLines: string[],
  ) {
    // The process's own `rft: …` line is the reason.
    const why = [...lastLines].reverse().find((l) => l.startsWith('rft: '));
    super(why ? why.slice(5) : `${component} process refused the run; last log lines:\n  ${lastLines.join('\n  ')}`);
    this.name = 'ProcessRefusedError';
  }
}

export interface WorkerSpec {
  name: string;
  args: string[];
  /** How many times it is started again after dying. */
  restarts: number;
  /** Added to this process's environment (e.g. the trust a run was started with). */
  env?: Record<string, string>;
  onEvent?(e: {
    kind: 'started' | 'died' | 'restarted' | 'exited';
    pid?: number;
    code?: number | null;
    signal?: string | null;
    lastLines?: string[];
  }): void;
}

/** One supervised worker: `done` resolves when it exits 0 (or after stop()), rejects once it died more often than allowed. */
export class Worker {
  private child: ChildProcess | null = null;
  private tail: string[] = [];
  private stopping = false;
  private restartsLeft: number;
  private readonly logFile: WriteStream;
  private readonly logPath: string;
  /** The log could not be written (a full disk): the worker is stopped and `done` rejects with this. */
  private logFailure?: Error;
  readonly done: Promise<void>;
  private settle!: { resolve: () => void; reject: (e: Error) => void };

  constructor(
    readonly spec: WorkerSpec,
    logDir: string,
  ) {
    this.restartsLeft = spec.restarts;
    mkdirSync(logDir, { recursive: true });
    this.logPath = join(logDir, `${spec.name}.log`);
    this.logFile = createWriteStream(this.logPath, { flags: 'a' });
    this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    this.done.catch(() => undefined);
    // A failed write of the log (ENOSPC) was an unhandled 'error' event that ended the whole run with a raw stack.
    this.logFile.on('error', (e) => this.onLogError(e));
    this.start();
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  lastLines(n = 20): string[] {
    return this.tail.slice(-n);
  }

  private start(): void {
    const child = spawn(process.execPath, [...cliCommand(), ...this.spec.args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...this.spec.env },
    });
    this.child = child;
    this.spec.onEvent?.({ kind: 'started', pid: child.pid });
    log.info(`${this.spec.name} started (pid ${child.pid})`);
    let partial = '';
    const onData = (buf: Buffer) => {
      if (!this.logFailure) this.logFile.write(buf);
      const lines = (partial + buf.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      this.tail.push(...lines.filter((l) => l.trim()));
      if (this.tail.length > 200) this.tail = this.tail.slice(-100);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code, signal) => {
      if (partial.trim()) this.tail.push(partial);
      partial = '';
      if (this.child !== child) return;
      this.child = null;
      if (this.logFailure) {
        this.spec.onEvent?.({ kind: 'exited', code, signal });
        this.settle.reject(this.logFailure);
        return;
      }
      if (this.stopping || code === 0) {
        this.spec.onEvent?.({ kind: 'exited', code, signal });
        this.logFile.end();
        this.settle.resolve();
        return;
      }
      const lastLines = this.lastLines();
      this.spec.onEvent?.({ kind: 'died', code, signal, lastLines });
      log.warn(
        `${this.spec.name} died (${signal ?? `exit ${code}`}); last lines:\n  ${lastLines.slice(-8).join('\n  ')}`,
      );
      if (code === EXIT_REFUSED) {
        this.logFile.end();
        this.settle.reject(new ProcessRefusedError(this.spec.name, lastLines));
        return;
      }
      if (this.restartsLeft > 0) {
        this.restartsLeft--;
        this.spec.onEvent?.({ kind: 'restarted' });
        this.start();
        return;
      }
      this.logFile.end();
      this.settle.reject(new ProcessDiedError(this.spec.name, code, signal, lastLines));
    });
  }

  /**
   * The log cannot be written: the worker is stopped (it would go on writing to the same disk) and
   * `done` rejects with the reason naming the file, "disk full at PATH" for a full disk.
   */
  private onLogError(e: Error): void {
    if (this.logFailure) return;
    this.logFailure = isDiskFull(e)
      ? new DiskFullError(this.logPath, e)
      : new InfrastructureError(`cannot write ${this.logPath}: ${e.message.split('\n')[0]}`, { cause: e });
    log.error(`${this.spec.name}: ${this.logFailure.message}`);
    this.stopping = true;
    const child = this.child;
    if (!child) return this.settle.reject(this.logFailure);
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 20_000).unref();
  }

  /** SIGTERM (the worker stops after its current step), then SIGKILL after graceMs. */
  async stop(graceMs = 20_000): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (!child) return this.done.catch(() => undefined);
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    try {
      await this.done.catch(() => undefined);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Resolves when `main` finishes; rejects as soon as any worker dies for good. */
export async function superviseStage(main: Worker, others: Worker[]): Promise<void> {
  await Promise.race([main.done, ...others.map((w) => w.done.then(() => new Promise<void>(() => undefined)))]);
}
