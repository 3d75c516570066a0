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
import { MAX_REQUEST_BYTES, MAX_REWARD_RESULT_BYTES, MAX_WORKFLOW_RESULT_BYTES, plainDataProblem } from './limits.js';
import { guardOwnProcess } from './own-process.js';

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

/**
 * Posts a result, checked here first as plain data within LIMIT (limits.ts): what the explorer
 * could not hold or write is the call's error, naming the field and the file.
 */
function reply(id: number, value: unknown, limit: number, what: string): void {
  const problem = plainDataProblem(value, limit, what);
  if (problem)
    return send({ type: 'result', id, ok: false, error: `returned a value it cannot take (${file}): ${problem}` });
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
  const name = `ctx.${method === 'generate' ? 'model.generate' : 'reward'}`;
  const problem = plainDataProblem(args, MAX_REQUEST_BYTES, `the arguments of ${name}`);
  if (problem) return Promise.reject(new Error(`${name}: ${problem}`));
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
    if (m.kind === 'reward') {
      value = await impls.reward.get(m.name)!(m.task, m.response, { signal: ctl.signal });
      reply(m.id, value, MAX_REWARD_RESULT_BYTES, 'its result');
    } else {
      if (m.tokenizer) tokenizers.set(m.ctx.model.tokenizer, tokenizerFromTransfer(m.tokenizer));
      value = await impls.workflow.get(m.name)!(m.tasks, workflowContext(m.id, m.ctx, ctl.signal));
      reply(m.id, value, MAX_WORKFLOW_RESULT_BYTES, 'its experiences');
    }
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
    // Before the file's code runs: a signal to the run's own process is refused.
    guardOwnProcess();
    capOutput(process.stdout, m.output, m.outputCap);
    capOutput(process.stderr, m.output, m.outputCap);
    send({ type: 'loading' });
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

/**
 * The code's writes to STREAM pass while the file's output (all its threads, shared COUNTS:
 * [passed, dropped]) is under CAP; the rest is dropped and counted, and the host told once.
 */
function capOutput(stream: NodeJS.WriteStream, counts: SharedArrayBuffer, cap: number): void {
  const n = new BigInt64Array(counts);
  const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  let told = false;
  stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const bytes =
      typeof chunk === 'string'
        ? Buffer.from(chunk, typeof rest[0] === 'string' ? (rest[0] as BufferEncoding) : 'utf8')
        : Buffer.from(chunk);
    const passed = Number(Atomics.add(n, 0, BigInt(bytes.length)));
    const room = Math.max(0, cap - passed);
    const cb = rest.find((x) => typeof x === 'function') as ((e?: Error) => void) | undefined;
    if (bytes.length <= room) return write(bytes, cb);
    // Past the cap: only what fits is passed; the counter keeps what was passed, the rest is dropped.
    Atomics.sub(n, 0, BigInt(bytes.length - room));
    Atomics.add(n, 1, BigInt(bytes.length - room));
    if (!told) {
      told = true;
      send({ type: 'output_capped' });
    }
    if (room > 0) return write(bytes.subarray(0, room), cb);
    cb?.();
    return true;
  }) as typeof stream.write;
}

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
        const problem = plainDataProblem(st, MAX_REWARD_RESULT_BYTES, 'its step');
        if (problem) throw new Error(`step returned a value it cannot take: ${problem}`);
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
