// The worker thread that runs a `workflow.file` (user-code/host.ts starts it): the user's code lives
// here, so a `process.exit` ends this thread only, a synchronous loop blocks only this thread (the
// host's deadline terminates it) and a throw is answered as the call's error. The model, the run's
// reward and the abort signal stay with the explorer and are reached by messages.
import { parentPort, type MessagePort } from 'node:worker_threads';
import type { Task } from '../../core/types.js';
import { tokenizerFromTransfer } from '../../model/tokenizer/transfer.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import { fileLine, loadImpls, type LoadedImpls } from './load.js';
import {
  SYNC_EXITED,
  SYNC_REPLIED,
  type FromWorker,
  type SyncReply,
  type SyncRequest,
  type ToWorker,
  type WireContext,
} from './protocol.js';
import { InputError, formatLocation } from '../../core/errors.js';

const port = parentPort;
if (!port) throw new Error('user-code/worker.ts runs as a worker thread');
const send = (m: FromWorker) => port.postMessage(m);

let file = '';
let loaded: Promise<LoadedImpls> | undefined;
const aborts = new Map<number, AbortController>();
const rpcs = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
const tokenizers = new Map<number, Tokenizer>();
const sessions = new Map<number, { step(action: string): unknown }>();
let nextRpc = 0;
let nextSession = 0;

function describe(e: unknown): string {
  const msg = (e as Error)?.message ?? String(e);
  const at = fileLine(file, e);
  return `threw at ${at}: ${msg}`;
}

/** Posts a result; a value that structured clone cannot carry (a function, a class instance with one) is an error. */
function reply(id: number, value: unknown): void {
  try {
    send({ type: 'result', id, ok: true, value });
  } catch (e) {
    send({
      type: 'result',
      id,
      ok: false,
      error: `returned a value that cannot be passed back (${(e as Error).message.split('\n')[0]})`,
    });
  }
}

function rpc(id: number, method: 'generate' | 'reward', args: unknown[]): Promise<unknown> {
  const n = nextRpc++;
  return new Promise((resolve, reject) => {
    rpcs.set(n, { resolve, reject });
    try {
      send({ type: 'rpc', id, rpc: n, method, args });
    } catch (e) {
      rpcs.delete(n);
      reject(
        new Error(
          `ctx.${method === 'generate' ? 'model.generate' : 'reward'}: arguments cannot be passed to the explorer (${(e as Error).message.split('\n')[0]})`,
        ),
      );
    }
  });
}

function workflowContext(id: number, c: WireContext, signal: AbortSignal): unknown {
  const tokenizer = tokenizers.get(c.model.tokenizer);
  return {
    ...c,
    signal,
    model: {
      version: c.model.version,
      maxSeqLen: c.model.maxSeqLen,
      tokenizer,
      generate: (prompts: number[][], opts: Record<string, unknown>) => rpc(id, 'generate', [prompts, opts]),
      embedImages: () => {
        throw new Error(
          'ctx.model.embedImages is not available to a workflow from workflow.file (it runs in its own thread)',
        );
      },
    },
    reward: (task: Task, response: string) => rpc(id, 'reward', [task, response]),
  };
}

async function call(m: Extract<ToWorker, { type: 'call' }>): Promise<void> {
  // Sent as the message is taken up: a call queued behind a synchronous one is not charged for the wait.
  send({ type: 'started', id: m.id });
  const impls = await loaded!;
  const ctl = new AbortController();
  aborts.set(m.id, ctl);
  try {
    let value: unknown;
    if (m.kind === 'reward') value = await impls.reward.get(m.name)!(m.task, m.response, { signal: ctl.signal });
    else {
      if (m.tokenizer) tokenizers.set(m.ctx.model.tokenizer, tokenizerFromTransfer(m.tokenizer));
      value = await impls.workflow.get(m.name)!(m.tasks, workflowContext(m.id, m.ctx, ctl.signal));
    }
    reply(m.id, value);
  } catch (e) {
    send({ type: 'result', id: m.id, ok: false, error: describe(e) });
  } finally {
    aborts.delete(m.id);
  }
}

port.on('message', (m: ToWorker) => {
  if (m.type === 'load') {
    file = m.file;
    const flag = new Int32Array(m.sync);
    // The explorer may be waiting on a synchronous environment call: tell it at once that this thread ended.
    process.on('exit', (code) => {
      Atomics.store(flag, 1, code ?? 0);
      Atomics.store(flag, 0, SYNC_EXITED);
      Atomics.notify(flag, 0);
    });
    loaded = loadImpls(file);
    loaded.then(
      (impls) => send({ type: 'loaded', registered: impls.registered }),
      (e: unknown) => {
        const location = e instanceof InputError ? e.location : { file };
        const message =
          e instanceof InputError
            ? e.message.slice(formatLocation(location).length)
            : `could not load: ${(e as Error)?.message ?? String(e)}`;
        send({ type: 'load_error', message, location });
      },
    );
    serveSync(m.syncPort, flag);
  } else if (m.type === 'call') void call(m);
  else if (m.type === 'abort') aborts.get(m.id)?.abort(new Error('the explorer stopped'));
  else if (m.type === 'rpc_result') {
    const r = rpcs.get(m.rpc);
    rpcs.delete(m.rpc);
    if (m.ok) r?.resolve(m.value);
    else r?.reject(new Error(m.error));
  } else if (m.type === 'ping') send({ type: 'pong', n: m.n });
});

/** Environment calls: the explorer waits on the shared flag (Atomics.wait) until the reply is posted. */
function serveSync(sp: MessagePort, flag: Int32Array): void {
  sp.on('message', async (q: SyncRequest) => {
    let r: SyncReply;
    try {
      const impls = await loaded!;
      if (q.op === 'create') {
        const env = impls.environment.get(q.name);
        if (!env) throw new Error(`no environment '${q.name}' in ${file}`);
        const s = env.create(q.task);
        if (!s || typeof s.step !== 'function')
          throw new Error(`environment '${q.name}': create(task) returned no { step(action) }`);
        sessions.set(++nextSession, s);
        r = { ok: true, session: nextSession };
      } else {
        const s = sessions.get(q.session);
        if (!s) throw new Error('the episode is no longer open (its worker was restarted)');
        const st = s.step(q.action) as { done?: boolean } | undefined;
        if (st?.done) sessions.delete(q.session);
        r = { ok: true, step: st as never };
      }
    } catch (e) {
      r = { ok: false, error: describe(e) };
    }
    try {
      sp.postMessage(r);
    } catch (e) {
      sp.postMessage({
        ok: false,
        error: `returned a value that cannot be passed back (${(e as Error).message.split('\n')[0]})`,
      } satisfies SyncReply);
    }
    Atomics.store(flag, 0, SYNC_REPLIED);
    Atomics.notify(flag, 0);
  });
}
