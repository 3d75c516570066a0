// The explorer's side of a `workflow.file`: its code runs in a worker thread (user-code/worker.ts)
// so that a `process.exit`, a synchronous loop or a throw costs the one call that met it, never the
// run. Each call has a time limit, counted from when the thread takes it up (the worker says so: a
// call queued behind a synchronous one is not charged for the wait), less the time spent waiting on
// the model or the run's reward, which the explorer does (call-clock.ts). A call past it fails; when
// the thread then does not answer a ping within PING_MS (thread.ts) it is blocked (a synchronous
// loop) and is terminated, failing the calls in it (those that did not end it run again alone); a thread that ended
// (process.exit, an uncaught error) fails its calls with that reason. The next call starts a fresh
// thread, which loads the file again. Environments are synchronous by contract: their calls wait on
// a shared flag (Atomics.wait) with the same limit.
//
// What the code could still do to the run is bounded too (user-code/limits.ts): loading the file has
// the same limit (a loop at its top level, an await that never settles); a signal to the run's own
// process is refused (own-process.ts); results are checked as plain data of bounded size in the
// thread before they are posted (a BigInt, a cycle, a 5e6-element `details`: the call's error naming
// the field); the thread's heap is bounded (running out ends the thread, not the run); its output is
// passed on up to a cap, the rest counted; after BREAKER_TIMEOUTS calls in a row past their limit the
// file is given up on (each further call fails at once: an infrastructure failure naming the file);
// and the processes it started are killed when its thread ends and when the run exits (reap.ts).
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { InfrastructureError, InputError } from '../../core/errors.js';
import { logger } from '../../core/log.js';
import type { Task } from '../../core/types.js';
import { tokenizerTransfer } from '../../model/tokenizer/transfer.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import type { EnvStep } from '../environments/registry.js';
import type { WorkflowContext } from '../workflow.js';
import type { CustomKind } from './load.js';
import { CallClock } from './call-clock.js';
import { BREAKER_TIMEOUTS, OUTPUT_CAP_BYTES } from './limits.js';
import { newToken, reapToken } from './reap.js';
import {
  SYNC_EXITED,
  SYNC_IDLE,
  type FromWorker,
  type SyncReply,
  type SyncRequest,
  type ToWorker,
} from './protocol.js';
import { Bystander, hold, type Live, type Pending, settle, startThread } from './thread.js';

const log = logger('user-code');

export const DEFAULT_CODE_TIMEOUT_MS = 60_000;
/** Added to the first environment call of a new thread: it starts and loads the file first. */
const START_MS = 30_000;

const tokenizerKeys = new WeakMap<Tokenizer, number>();
let nextTokenizerKey = 0;

export class UserCodeHost {
  private live?: Live;
  private nextId = 0;
  /** The time limits of its calls (call-clock.ts). */
  private readonly clock: CallClock;
  /** Threads started (the first, then one after each that ended or was stopped). */
  threads = 0;
  /** Bytes of the code's output passed on, and dropped past OUTPUT_CAP_BYTES, by all its threads (counted in them). */
  private readonly outputCounts = new SharedArrayBuffer(16);
  private outputCapped = false;
  /** Calls in a row that passed their limit; at BREAKER_TIMEOUTS the file is given up on (`tripped` says why). */
  private timeouts = 0;
  tripped?: string;

  /** Where bystanders run again, one at a time, so that the call that ends a thread fails alone. */
  private solo?: UserCodeHost;
  /** A solo host's owner: its output cap and its count of timeouts are the owner's. */
  private owner?: UserCodeHost;
  private soloChain: Promise<unknown> = Promise.resolve();

  constructor(
    readonly file: string,
    readonly timeoutMs = DEFAULT_CODE_TIMEOUT_MS,
    private readonly isSolo = false,
  ) {
    this.clock = new CallClock({ timeoutMs, end: (...a) => this.end(...a), timedOut: () => this.timedOut() });
  }

  /** Starts the thread and loads the file: what it registered, or the InputError naming the file. */
  start(): Promise<{ kind: CustomKind; name: string }[]> {
    return this.thread().ready;
  }

  close(): void {
    const l = this.live;
    this.live = undefined;
    this.solo?.close();
    if (this.dropped)
      log.warn(
        `${this.file}: ${this.dropped} byte(s) of its output were dropped (over the cap of ${OUTPUT_CAP_BYTES} bytes)`,
      );
    if (!l) return;
    l.ended ??= `${this.file} was unloaded`;
    this.end(l, l.ended, true);
  }

  callReward(name: string, task: Task, response: string, signal?: AbortSignal): Promise<unknown> {
    return this.guard(
      () => this.call({ kind: 'reward', name, task, response }, undefined, signal),
      (h) => h.callReward(name, task, response, signal),
    );
  }

  callWorkflow(name: string, tasks: Task[], ctx: WorkflowContext): Promise<unknown> {
    return this.guard(
      () => this.workflowCall(name, tasks, ctx),
      (h) => h.callWorkflow(name, tasks, ctx),
    );
  }

  /** Calls in a thread that another call ended run again one at a time in a thread of their own: only the call that ends it fails. */
  private async guard(run: () => Promise<unknown>, again: (h: UserCodeHost) => Promise<unknown>): Promise<unknown> {
    try {
      return await run();
    } catch (e) {
      if (!(e instanceof Bystander)) throw e;
      if (!this.solo) {
        this.solo = new UserCodeHost(this.file, this.timeoutMs, true);
        this.solo.owner = this;
      }
      const solo = this.solo;
      const next = this.soloChain.then(() => again(solo));
      this.soloChain = next.catch(() => {});
      return next;
    }
  }

  private workflowCall(name: string, tasks: Task[], ctx: WorkflowContext): Promise<unknown> {
    const { model, reward: _r, signal, ...plain } = ctx;
    let key = tokenizerKeys.get(model.tokenizer);
    if (key === undefined) tokenizerKeys.set(model.tokenizer, (key = nextTokenizerKey++));
    const k = key;
    return this.call(
      {
        kind: 'workflow',
        name,
        tasks,
        ctx: { ...plain, model: { version: model.version, maxSeqLen: model.maxSeqLen, tokenizer: k } },
      },
      ctx,
      signal,
      (l) => {
        if (l.tokenizers.has(k)) return {};
        l.tokenizers.add(k);
        return { tokenizer: tokenizerTransfer(model.tokenizer) };
      },
    );
  }

  envCreate(name: string, task: Task): number {
    return this.sync({ op: 'create', name, task }).session!;
  }

  envStep(session: number, action: string): EnvStep {
    return this.sync({ op: 'step', session, action }).step!;
  }

  private thread(): Live {
    if (this.live && !this.live.ended) return this.live;
    const token = newToken();
    const worker = startThread(token);
    const { port1, port2 } = new MessageChannel();
    const sync = new SharedArrayBuffer(8);
    const l: Live = {
      worker,
      token,
      ready: undefined as never,
      pending: new Map(),
      flag: new Int32Array(sync),
      syncPort: port1,
      tokenizers: new Set(),
      answered: false,
      busy: 0,
      pings: new Map(),
    };
    l.ready = new Promise((resolve, reject) => {
      worker.on('message', (m: FromWorker) => {
        if (m.type === 'loading') {
          // The file's own code runs from here: a loop at its top level or an await that never settles is stopped at the limit.
          l.loadTimer = setTimeout(() => {
            const why = `did not finish loading within ${this.timeoutMs / 1000} s (workflow.code_timeout_seconds): a loop at its top level or in its default export, or an await that never settles?`;
            reject(new InputError(why, { file: this.file, field: 'default' }));
            this.end(l, `its thread was stopped: it ${why}`, true);
          }, this.timeoutMs);
        } else if (m.type === 'loaded') {
          clearTimeout(l.loadTimer);
          l.answered = true;
          resolve(m.registered);
        } else if (m.type === 'load_error') {
          clearTimeout(l.loadTimer);
          reject(new InputError(m.message, m.location));
        } else this.onMessage(l, m);
      });
      worker.on('error', (e) => {
        if (!l.ended) l.ended = `its thread ended with an error outside any call: ${e.message.split('\n')[0]}`;
      });
      worker.on('exit', (code) => {
        clearTimeout(l.loadTimer);
        const why = l.ended ?? `its thread ended (process.exit(${code}) in ${this.file})`;
        reject(new InputError(`the default export ended its thread: ${why}`, { file: this.file, field: 'default' }));
        this.end(l, why, false);
      });
    });
    // An idle thread must not keep the explorer's process alive (it ends when its run does).
    port1.unref();
    hold(l, 1);
    l.ready.then(
      () => hold(l, -1),
      () => hold(l, -1),
    );
    const output = (this.owner ?? this).outputCounts;
    worker.postMessage(
      { type: 'load', file: this.file, sync, syncPort: port2, output, outputCap: OUTPUT_CAP_BYTES } satisfies ToWorker,
      [port2],
    );
    this.threads++;
    this.live = l;
    return l;
  }

  /**
   * The thread is gone or being stopped: every call in it fails with WHY. Those that did not end it
   * (BYSTANDERS: all of them when the culprit is known and settled already, else when there were
   * several) are run again alone (guard).
   */
  private end(l: Live, why: string, terminate: boolean, bystanders?: boolean): void {
    const was = l.ended;
    l.ended ??= why;
    if (this.live === l) this.live = undefined;
    const n = l.pending.size;
    const again = !this.isSolo && (bystanders ?? n > 1);
    for (const p of l.pending.values()) {
      clearTimeout(p.timer);
      p.unlisten?.();
      p.reject(again ? new Bystander(l.ended) : new Error(l.ended));
    }
    hold(l, -n);
    l.pending.clear();
    if (!was || n)
      log.warn(
        `${this.file}: ${l.ended}${n ? ` (${n} call(s) in it ${again ? 'run again one at a time' : 'failed'})` : ''}; the next call starts a new thread`,
      );
    l.syncPort.close();
    clearTimeout(l.loadTimer);
    // The processes its code started go with it (once it can start no more).
    const reap = () => {
      const n = reapToken(l.token);
      if (n) log.warn(`${this.file}: ${n} process(es) its code started were still running; killed`);
    };
    if (terminate) void l.worker.terminate().then(reap, reap);
    else reap();
  }

  get printed(): number {
    return Number(Atomics.load(new BigInt64Array((this.owner ?? this).outputCounts), 0));
  }

  get dropped(): number {
    return Number(Atomics.load(new BigInt64Array((this.owner ?? this).outputCounts), 1));
  }

  /** A thread dropped output past the cap: said once per file (the count when it is unloaded). */
  private capped(): void {
    if (this.owner) return this.owner.capped();
    if (this.outputCapped) return;
    this.outputCapped = true;
    log.warn(
      `${this.file}: its output passed the cap of ${OUTPUT_CAP_BYTES} bytes; the rest is dropped (counted, said when the file is unloaded)`,
    );
  }

  /** A call passed its limit: BREAKER_TIMEOUTS in a row and the file is given up on for the rest of the run. */
  private timedOut(): void {
    if (this.owner) return this.owner.timedOut();
    if (++this.timeouts < BREAKER_TIMEOUTS || this.tripped) return;
    this.tripped = `is not called any more: ${BREAKER_TIMEOUTS} calls in a row did not return within ${this.timeoutMs / 1000} s (workflow.code_timeout_seconds), so ${this.file} is given up on for the rest of the run (each further call is an infrastructure failure)`;
    log.error(`${this.file} ${this.tripped}`);
  }

  private async call(
    msg:
      | { kind: 'reward'; name: string; task: Task; response: string }
      | { kind: 'workflow'; name: string; tasks: Task[]; ctx: Extract<ToWorker, { kind: 'workflow' }>['ctx'] },
    ctx?: WorkflowContext,
    signal?: AbortSignal,
    extra?: (l: Live) => object,
  ): Promise<unknown> {
    const tripped = (this.owner ?? this).tripped;
    if (tripped) throw new InfrastructureError(tripped);
    const l = this.thread();
    try {
      await l.ready;
    } catch (e) {
      throw new InfrastructureError(`could not be started again: ${(e as Error).message}`);
    }
    if (l.ended) throw new Error(l.ended);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const p: Pending = { resolve, reject, ctx, waiting: 0, started: false, remaining: this.timeoutMs, armedAt: 0 };
      l.pending.set(id, p);
      hold(l, 1);
      this.clock.queued(l, id, p);
      try {
        l.worker.postMessage({ type: 'call', id, ...msg, ...extra?.(l) } as ToWorker);
      } catch (e) {
        settle(l, id);
        reject(new Error(`its arguments cannot be passed to its thread: ${(e as Error).message.split('\n')[0]}`));
        return;
      }
      if (signal) {
        const onAbort = () =>
          l.pending.has(id) && !l.ended && l.worker.postMessage({ type: 'abort', id } satisfies ToWorker);
        signal.addEventListener('abort', onAbort, { once: true });
        p.unlisten = () => signal.removeEventListener('abort', onAbort);
      }
    });
  }

  private onMessage(l: Live, m: FromWorker): void {
    if (m.type === 'pong') l.pings.get(m.n)?.();
    else if (m.type === 'output_capped') this.capped();
    else if (m.type === 'started') this.clock.started(l, m.id);
    else if (m.type === 'result') {
      const p = settle(l, m.id);
      if (!p) return;
      (this.owner ?? this).timeouts = 0;
      if (m.ok) p.resolve(m.value);
      else p.reject(new Error(m.error));
    } else if (m.type === 'rpc') void this.serve(l, m);
  }

  /** A workflow's request to the explorer (ctx.model.generate, ctx.reward); its time is not the workflow's. */
  private async serve(l: Live, m: Extract<FromWorker, { type: 'rpc' }>): Promise<void> {
    const p = l.pending.get(m.id);
    const answer = (r: Extract<ToWorker, { type: 'rpc_result' }>) => !l.ended && l.worker.postMessage(r);
    if (!p?.ctx) return void answer({ type: 'rpc_result', rpc: m.rpc, ok: false, error: 'the call has ended' });
    if (p.waiting++ === 0) {
      clearTimeout(p.timer);
      p.remaining -= performance.now() - p.armedAt;
    }
    try {
      const value =
        m.method === 'generate'
          ? await p.ctx.model.generate(m.args[0] as number[][], m.args[1] as never)
          : await p.ctx.reward(m.args[0] as Task, m.args[1] as string, { signal: p.ctx.signal });
      answer({ type: 'rpc_result', rpc: m.rpc, ok: true, value });
    } catch (e) {
      answer({ type: 'rpc_result', rpc: m.rpc, ok: false, error: (e as Error).message });
    } finally {
      if (--p.waiting === 0 && l.pending.get(m.id) === p) this.clock.arm(l, m.id, p);
    }
  }

  /** An environment call: the explorer waits (environments are synchronous), at most the time limit. */
  private sync(q: SyncRequest): Extract<SyncReply, { ok: true }> {
    if (this.tripped) throw new InfrastructureError(this.tripped);
    const l = this.thread();
    if (Atomics.load(l.flag, 0) === SYNC_EXITED) {
      this.end(l, `its thread ended (process.exit(${Atomics.load(l.flag, 1)}) in ${this.file})`, true);
      return this.sync(q);
    }
    Atomics.store(l.flag, 0, SYNC_IDLE);
    l.syncPort.postMessage(q);
    const waited = Atomics.wait(l.flag, 0, SYNC_IDLE, this.timeoutMs + (l.answered ? 0 : START_MS));
    if (Atomics.load(l.flag, 0) === SYNC_EXITED) {
      const why = `its thread ended (process.exit(${Atomics.load(l.flag, 1)}) in ${this.file})`;
      this.end(l, why, true, true);
      throw new Error(why);
    }
    if (waited === 'timed-out') {
      this.timedOut();
      // An environment call is synchronous: a thread that has not answered is busy in it (a synchronous loop?).
      const limit = `did not return within ${this.timeoutMs / 1000} s (workflow.code_timeout_seconds)`;
      const why = `${limit} and its thread stopped answering (a synchronous loop?): the thread was stopped`;
      this.end(l, `its thread was stopped: an environment call ${limit}`, true, true);
      throw new Error(why);
    }
    const r = receiveMessageOnPort(l.syncPort)?.message as SyncReply | undefined;
    if (!r) throw new Error('no reply from its thread');
    l.answered = true;
    (this.owner ?? this).timeouts = 0;
    if (!r.ok) throw new Error(r.error);
    return r;
  }
}
