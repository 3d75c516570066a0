// One worker thread of a `workflow.file` as the host (user-code/host.ts) keeps it: what it holds
// (its calls in flight, its sync flag, the tokenizers sent to it), how it is started (the bundled
// worker, or the source under tsx), and the small operations on it that need no host: keeping the
// process alive only while it is busy, settling a call, and the ping that tells a blocked thread
// from a busy one.
import { type MessagePort, Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { fromSource, packageFile } from '../../core/package-root.js';
import type { WorkflowContext } from '../workflow.js';
import type { CustomKind } from './load.js';
import { USER_CODE_HEAP_MB } from './limits.js';
import { MARKER } from './reap.js';
import type { ToWorker } from './protocol.js';

/** How long a thread whose call passed its limit has to answer a ping before it counts as blocked. */
export const PING_MS = 1000;

export interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  ctx?: WorkflowContext;
  /** Requests to the explorer in flight: the time limit is paused while there are any. */
  waiting: number;
  /** The thread has taken the call up ('started'): its limit runs. */
  started: boolean;
  remaining: number;
  armedAt: number;
  timer?: NodeJS.Timeout;
  /** Removes the abort listener from the caller's signal (a run's signal outlives many calls). */
  unlisten?: () => void;
}

export interface Live {
  worker: Worker;
  /** The marker of the processes its code starts (reap.ts). */
  token: string;
  /** The load deadline (armed when the thread starts importing the file). */
  loadTimer?: NodeJS.Timeout;
  ready: Promise<{ kind: CustomKind; name: string }[]>;
  pending: Map<number, Pending>;
  flag: Int32Array;
  syncPort: MessagePort;
  tokenizers: Set<number>;
  /** Loads and calls in flight: the thread keeps the process alive only while there are any. */
  busy: number;
  /** The thread has answered a call (it has loaded the file): environment calls get no start allowance. */
  answered: boolean;
  /** Set once the thread is gone (or being stopped): the reason its calls failed. */
  ended?: string;
  pings: Map<number, () => void>;
  /** The thread is being pinged (a call passed its limit, or it took up no call): calls timing out meanwhile wait. */
  checking?: boolean;
}

export function startThread(token: string): Worker {
  // Its own process.env (with the marker its child processes inherit) and a bounded heap. (Its output
  // is capped in the thread: `stdout: true` here would keep an unref'd thread holding the process.)
  const opts = {
    env: { ...process.env, [MARKER]: token },
    resourceLimits: { maxOldGenerationSizeMb: USER_CODE_HEAP_MB },
  };
  // The bundles ship dist/backend/user-code-worker.mjs (scripts/build.mjs); under tsx a bootstrap registers tsx in the thread first (as workers/pool.ts does).
  if (!fromSource) return new Worker(packageFile('dist', 'backend', 'user-code-worker.mjs'), opts);
  const entry = pathToFileURL(packageFile('backend', 'explorer', 'user-code', 'worker.ts')).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(
    `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`,
    { eval: true, ...opts },
  );
}

/** A call that failed only because another call in its thread ended the thread: it is run again, alone. */
export class Bystander extends Error {}

export function hold(l: Live, d: number): void {
  l.busy += d;
  if (l.busy > 0) l.worker.ref();
  else l.worker.unref();
}

/** The call ID is over (answered, failed or timed out): its entry, or undefined if it was settled already. */
export function settle(l: Live, id: number): Pending | undefined {
  const p = l.pending.get(id);
  if (!p) return undefined;
  clearTimeout(p.timer);
  p.unlisten?.();
  l.pending.delete(id);
  hold(l, -1);
  return p;
}

/** Whether the thread answers ping N within PING_MS (an ended thread counts as answering: its calls are failed already). */
export function answers(l: Live, n: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const t = setTimeout(() => {
      l.pings.delete(n);
      resolve(false);
    }, PING_MS);
    l.pings.set(n, () => {
      clearTimeout(t);
      resolve(true);
    });
    if (l.ended) return resolve(true);
    l.worker.postMessage({ type: 'ping', n } satisfies ToWorker);
  });
}
