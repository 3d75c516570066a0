// YAML parsing of run configs off the server's main thread: a big or hostile config (20k aliases,
// 30 MB) kept every client waiting for seconds while the main thread parsed it. One worker thread,
// started on first use; a check that runs past its deadline ends the thread (a new one starts for
// the next check) and is answered with an issue instead of a wait.
import { Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { fromSource, packageFile } from '../../core/package-root.js';
import type { ConfigIssueAt } from '../../core/protocol.js';

/** A config check that takes longer than this is given up (the file is capped at 256 KiB: a real one takes milliseconds). */
export const CONFIG_CHECK_MS = 30_000;

type Result = { issues: ConfigIssueAt[]; clean: boolean };
interface Pending {
  resolve(r: Result): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

function startThread(): Worker {
  // The bundle ships dist/backend/config-worker.mjs (scripts/backend-entries.mjs); under tsx a bootstrap registers tsx first.
  if (!fromSource) return new Worker(packageFile('dist', 'backend', 'config-worker.mjs'));
  const entry = pathToFileURL(packageFile('backend', 'server', 'config-check', 'worker.ts')).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(
    `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`,
    { eval: true },
  );
}

export class ConfigThread {
  private worker?: Worker;
  private nextId = 0;
  private readonly pending = new Map<number, Pending>();

  /** `deadlineMs`: how long one check may take (CONFIG_CHECK_MS). */
  constructor(public deadlineMs = CONFIG_CHECK_MS) {}

  check(text: string, file: string): Promise<Result> {
    const w = this.thread();
    const id = this.nextId++;
    return new Promise<Result>((resolve, reject) => {
      const timer = setTimeout(() => {
        // The parse is stuck: end the thread; its other checks fail and are asked again by the editor.
        this.stop(new Error(`checking ${file} took over ${this.deadlineMs / 1000} s: given up`));
      }, this.deadlineMs);
      this.pending.set(id, { resolve, reject, timer });
      w.ref();
      w.postMessage({ id, text, file });
    });
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const w = startThread();
    w.on('message', (m: { id: number; result?: Result; error?: string }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.result) p.resolve(m.result);
      else p.reject(new Error(m.error ?? 'config check failed'));
      if (!this.pending.size) w.unref();
    });
    // Only for the thread in use: an old one, ended by stop(), exits after a new one has started.
    w.on('error', (e) => this.worker === w && void this.stop(e));
    w.on('exit', (code) => this.worker === w && void this.stop(new Error(`the config thread exited (code ${code})`)));
    this.worker = w;
    return w;
  }

  /** Ends the thread and fails what it had in hand; the next check starts a new one. */
  stop(why = new Error('the config thread was stopped')): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(why);
      this.pending.delete(id);
    }
    return w ? w.terminate().then(() => undefined) : Promise.resolve();
  }
}
