// Builds the server's dependencies from the backend parts that exist: buffer storage + feedback,
// taskset validation/watching, the run registry. A part that is missing leaves its capability
// off (requests then fail with NotAvailable) instead of being faked.
import { resolve } from 'node:path';
import type { BufferRef } from '../core/protocol.js';
import { openStore, resolveBufferUrl, schemeOf } from '../buffer/storage/index.js';
import type { BufferOpener, RunRegistryPort, ServerDeps } from './ports.js';
import { ProcessRunController } from './process-run-controller.js';
import { StoreBuffer } from './adapters/store-buffer.js';
import { StoreFeedback } from './adapters/store-feedback.js';
import { RunTokenizers } from './adapters/run-tokenizers.js';
import { tasksetPort } from './adapters/tasksets.js';
import { NotFoundError } from './errors.js';
import { WorkspaceRuns } from './adapters/run-registry.js';

export interface WireOptions {
  workspace: string;
  defaultBuffer?: BufferRef;
}

export function storeOpener(workspace: string, runs: RunRegistryPort): BufferOpener {
  return {
    async resolve(ref) {
      if (ref.path) return schemeOf(ref.path) === 'sqlite' ? resolveBufferUrl(resolve(workspace, ref.path)) : ref.path;
      const run = ref.runId ? await runs.get(ref.runId) : null;
      if (!run?.bufferPath) throw new NotFoundError(`no run '${ref.runId}' in ${workspace}/.rft/runs.json`);
      return run.bufferPath;
    },
    async open(key) {
      const store = await openStore(key);
      const tokenizers = new RunTokenizers(store, key);
      return { buffer: new StoreBuffer(store, key, tokenizers), feedback: new StoreFeedback(store, tokenizers) };
    },
  };
}

export async function wireDeps(opts: WireOptions): Promise<ServerDeps> {
  const runs = new WorkspaceRuns(opts.workspace);
  return {
    buffers: storeOpener(opts.workspace, runs),
    runs,
    tasksets: tasksetPort,
    control: new ProcessRunController(opts.workspace),
    defaultBuffer: opts.defaultBuffer,
  };
}
