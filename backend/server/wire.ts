// Builds the server's dependencies from the backend parts that exist: buffer storage + feedback,
// taskset validation/watching, the run registry. A part that is missing leaves its capability
// off (requests then fail with NotAvailable) instead of being faked.
import type { BufferRef } from '../core/protocol.js';
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { openStore, resolveBufferUrl, schemeOf } from '../buffer/storage/index.js';
import type { BufferOpener, RunRegistryPort, ServerDeps } from './ports.js';
import { ProcessRunController } from './process-run-controller.js';
import { StoreBuffer } from './adapters/store-buffer.js';
import { StoreFeedback } from './adapters/store-feedback.js';
import { RunTokenizers } from './adapters/run-tokenizers.js';
import { tasksetPort } from './adapters/tasksets.js';
import { ForbiddenError, NotFoundError } from './errors.js';
import { WorkspaceRuns } from './adapters/run-registry.js';
import { WorkspacePaths, within } from './confine.js';
import { checkBufferFile, isFreshDatabase } from './buffer-check.js';

export interface WireOptions {
  workspace: string;
  defaultBuffer?: BufferRef;
}

/**
 * Buffers by path or run id. A SQLite path must lie inside the workspace (a run's buffer too: the
 * registry file may have been edited) and is opened only once it passed the read-only schema check.
 * A database URL (postgres://) from a request is accepted only when a run of this workspace uses it.
 * The buffer given on the command line (`--buffer`) is the user's own choice and is not confined.
 */
export function storeOpener(
  workspace: string,
  runs: RunRegistryPort,
  paths = new WorkspacePaths(workspace),
  trusted?: string,
): BufferOpener {
  const confined = (p: string, field: string) => {
    const file = p.replace(/^sqlite:(\/\/)?/, '');
    if (file.includes('?'))
      throw new ForbiddenError(`field '${field}': options in a buffer path are not accepted from a request`);
    return paths.inside(resolveBufferUrl(paths.inside(file, field)), field);
  };
  const creatable = new Set<string>();
  return {
    async resolve(ref) {
      if (ref.path) {
        if (
          trusted !== undefined &&
          (ref.path === trusted ||
            (schemeOf(ref.path) === 'sqlite' && resolveBufferUrl(resolve(workspace, ref.path)) === trusted))
        )
          return trusted;
        if (schemeOf(ref.path) === 'sqlite') return confined(ref.path, 'path');
        if ((await runs.list()).some((r) => r.bufferPath === ref.path)) return ref.path;
        throw new ForbiddenError(
          `field 'path': ${schemeOf(ref.path)} buffer is not one of this workspace's runs (see .rft/runs.json)`,
        );
      }
      const run = ref.runId ? await runs.get(ref.runId) : null;
      if (!run?.bufferPath) throw new NotFoundError(`no run '${ref.runId}' in ${workspace}/.rft/runs.json`);
      if (schemeOf(run.bufferPath) !== 'sqlite') return run.bufferPath;
      const key = confined(run.bufferPath, 'runId');
      // A run that has just started may not have written its buffer yet: that one file, in .rft/, may be created.
      if (within(join(paths.root, '.rft'), realpathOr(key))) creatable.add(key);
      return key;
    },
    async open(key) {
      // A run's own buffer may be mid-creation: not there yet, or made and still without its schema.
      if (schemeOf(key) === 'sqlite' && !(creatable.has(key) && (!existsSync(key) || isFreshDatabase(key))))
        checkBufferFile(key);
      const store = await openStore(key);
      const tokenizers = new RunTokenizers(store, key);
      return { buffer: new StoreBuffer(store, key, tokenizers), feedback: new StoreFeedback(store, tokenizers) };
    },
  };
}

/** `file` with its folder's links resolved (the file itself may not exist yet). */
function realpathOr(file: string): string {
  try {
    return join(realpathSync(dirname(file)), file.slice(dirname(file).length + 1));
  } catch {
    return file;
  }
}

export async function wireDeps(opts: WireOptions): Promise<ServerDeps> {
  const runs = new WorkspaceRuns(opts.workspace);
  const paths = new WorkspacePaths(opts.workspace);
  const d = opts.defaultBuffer?.path;
  const trusted =
    d === undefined ? undefined : schemeOf(d) === 'sqlite' ? resolveBufferUrl(resolve(opts.workspace, d)) : d;
  return {
    paths,
    buffers: storeOpener(opts.workspace, runs, paths, trusted),
    runs,
    tasksets: tasksetPort,
    control: new ProcessRunController(opts.workspace),
    defaultBuffer: opts.defaultBuffer,
  };
}
