// Messages between the explorer and the worker thread that runs a `workflow.file` (user-code/host.ts,
// user-code/worker.ts). Everything here is plain data that structured clone carries.
import type { MessagePort } from 'node:worker_threads';
import type { InputLocation } from '../../core/errors.js';
import type { Task } from '../../core/types.js';
import type { TokenizerTransfer } from '../../model/tokenizer/transfer.js';
import type { EnvStep } from '../environments/registry.js';
import type { CustomKind } from './load.js';

/** The plain-data part of a WorkflowContext; the model, reward and signal are served by the host. */
export interface WireContext {
  runId: string;
  repeatTimes: number;
  sampling: unknown;
  step: number;
  seed: number;
  split: 'train' | 'eval';
  maxTurns?: number;
  partialBudget?: number;
  model: { version: number; maxSeqLen?: number; tokenizer: number };
}

export type ToWorker =
  /** output: BigInt64 [bytes passed on, bytes dropped], shared by the file's threads; outputCap: the most passed on. */
  | {
      type: 'load';
      file: string;
      sync: SharedArrayBuffer;
      syncPort: MessagePort;
      output: SharedArrayBuffer;
      outputCap: number;
    }
  | { type: 'call'; id: number; kind: 'reward'; name: string; task: Task; response: string }
  | {
      type: 'call';
      id: number;
      kind: 'workflow';
      name: string;
      tasks: Task[];
      ctx: WireContext;
      tokenizer?: TokenizerTransfer;
    }
  | { type: 'abort'; id: number }
  | { type: 'rpc_result'; rpc: number; ok: true; value: unknown }
  | { type: 'rpc_result'; rpc: number; ok: false; error: string }
  | { type: 'ping'; n: number };

export type FromWorker =
  /** The thread starts importing the file: the load deadline runs from here. */
  | { type: 'loading' }
  | { type: 'loaded'; registered: { kind: CustomKind; name: string }[] }
  /** The thread took up call `id`: its time limit runs from here (before, it waited behind other work of the thread). */
  | { type: 'started'; id: number }
  | { type: 'load_error'; message: string; location: InputLocation }
  | { type: 'result'; id: number; ok: true; value: unknown }
  | { type: 'result'; id: number; ok: false; error: string }
  | { type: 'rpc'; id: number; rpc: number; method: 'generate' | 'reward'; args: unknown[] }
  | { type: 'pong'; n: number }
  /** The thread's output reached the cap: what follows is dropped (and counted). */
  | { type: 'output_capped' };

/** Synchronous environment calls (an environment's create / step are synchronous by contract). */
export type SyncRequest = { op: 'create'; name: string; task: Task } | { op: 'step'; session: number; action: string };
export type SyncReply = { ok: true; session?: number; step?: EnvStep } | { ok: false; error: string };

/** Slots of the shared Int32Array: [0] the reply flag, [1] the exit code when the worker ended. */
export const SYNC_IDLE = 0;
export const SYNC_REPLIED = 1;
export const SYNC_EXITED = 2;
