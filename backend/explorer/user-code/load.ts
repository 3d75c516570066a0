// Loading a workspace file of rewards, workflows and environments (explorer/custom.ts): import it
// and call its default export with the registration API, checking what it registers. Runs inside
// the user-code worker (user-code/worker.ts); the names are then checked against the explorer's
// registries by the host (a built-in or another file's name is refused there).
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { extname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InputError } from '../../core/errors.js';

export type CustomKind = 'reward' | 'workflow' | 'environment';

export interface CustomApi {
  readonly apiVersion: 1;
  register(kind: CustomKind, name: string, impl: unknown): void;
}

export const CUSTOM_EXTENSIONS = new Set(['.js', '.mjs', '.ts', '.mts']);
const NAME = /^[A-Za-z][\w.-]{0,63}$/;

export type RewardImpl = (task: unknown, response: string, ctx?: { signal?: AbortSignal }) => unknown;
export type WorkflowImpl = (tasks: unknown[], ctx: unknown) => unknown;
export type EnvironmentImpl = { create(task: unknown): { step(action: string): unknown } };

export interface LoadedImpls {
  registered: { kind: CustomKind; name: string }[];
  reward: Map<string, RewardImpl>;
  workflow: Map<string, WorkflowImpl>;
  environment: Map<string, EnvironmentImpl>;
}

/** `FILE:LINE` of the innermost stack frame in `file` (its import URL may carry a ?v= query), else FILE. */
export function fileLine(file: string, e: unknown): string {
  const stack = (e as Error | undefined)?.stack ?? '';
  const esc = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const m = new RegExp(`(?:${esc(pathToFileURL(file).href)}|${esc(file)})(?:\\?[^:\\s]*)?:(\\d+)`).exec(stack);
  return m ? `${file}:${m[1]}` : file;
}

/** Line of a syntax error in a .js/.mjs file (an import() SyntaxError does not carry it): `node --check` tells. */
function syntaxErrorLine(file: string): number | undefined {
  if (!['.js', '.mjs'].includes(extname(file))) return undefined;
  const r = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8', timeout: 10_000 });
  const m = /^(?:file:\/\/)?[^\n]*?:(\d+)\n/.exec(r.stderr ?? '');
  return m ? Number(m[1]) : undefined;
}

async function importFile(file: string): Promise<unknown> {
  const ext = extname(file);
  // Each load gets a fresh module instance, so an edited file is picked up.
  const url = `${pathToFileURL(file).href}?v=${statSync(file).mtimeMs}`;
  if (ext === '.ts' || ext === '.mts') {
    let api: { tsImport: (spec: string, parent: string) => Promise<unknown> };
    try {
      api = (await import('tsx/esm/api')) as typeof api;
    } catch {
      throw new InputError('TypeScript files need the tsx package; write the file as .js/.mjs instead', { file });
    }
    return api.tsImport(url, import.meta.url);
  }
  return import(url);
}

function makeApi(file: string, out: LoadedImpls): CustomApi {
  return {
    apiVersion: 1,
    register(kind: CustomKind, name: string, impl: unknown) {
      const where = { file, field: `register('${String(kind)}', '${String(name)}')` };
      if (kind !== 'reward' && kind !== 'workflow' && kind !== 'environment')
        throw new InputError(`kind must be 'reward', 'workflow' or 'environment'`, where);
      if (typeof name !== 'string' || !NAME.test(name))
        throw new InputError('name must be letters, digits, _ . - (starting with a letter, at most 64)', where);
      if (out.registered.some((r) => r.kind === kind && r.name === name))
        throw new InputError(`'${name}' is registered twice in this file`, where);
      if (kind === 'reward') {
        if (typeof impl !== 'function')
          throw new InputError('a reward must be a function (task, response) => number | { reward }', where);
        out.reward.set(name, impl as RewardImpl);
      } else if (kind === 'workflow') {
        const run = typeof impl === 'function' ? impl : (impl as { run?: unknown } | null)?.run;
        if (typeof run !== 'function')
          throw new InputError(
            'a workflow must be a function (tasks, ctx) => experiences, or an object with run(tasks, ctx)',
            where,
          );
        const self = typeof impl === 'function' ? undefined : impl;
        out.workflow.set(name, (t, c) => (run as WorkflowImpl).call(self, t, c));
      } else {
        const create = (impl as { create?: unknown } | null)?.create;
        if (typeof create !== 'function')
          throw new InputError('an environment must be an object with create(task) returning { step(action) }', where);
        out.environment.set(name, { create: (t) => (create as EnvironmentImpl['create']).call(impl, t) });
      }
      out.registered.push({ kind, name });
    },
  };
}

/** Import FILE (an absolute path) and run its default export. Throws InputError naming the file. */
export async function loadImpls(file: string): Promise<LoadedImpls> {
  if (!existsSync(file)) throw new InputError('file not found', { file });
  if (!CUSTOM_EXTENSIONS.has(extname(file)))
    throw new InputError(`custom code must be a ${[...CUSTOM_EXTENSIONS].join(', ')} file`, { file });
  let mod: { default?: unknown };
  try {
    mod = (await importFile(file)) as { default?: unknown };
  } catch (e) {
    if (e instanceof InputError) throw e;
    const at = fileLine(file, e);
    const line =
      e instanceof SyntaxError ? syntaxErrorLine(file) : at === file ? undefined : Number(at.slice(file.length + 1));
    throw new InputError(`could not load: ${(e as Error).message.split('\n')[0]}`, { file, ...(line ? { line } : {}) });
  }
  // A .ts file outside an ESM package is compiled as CommonJS: its default export sits one level down.
  const inner = (mod.default as { default?: unknown } | undefined)?.default;
  if (typeof mod.default !== 'function' && typeof inner === 'function') mod = { default: inner };
  if (typeof mod.default !== 'function')
    throw new InputError(
      'the default export must be a function that receives the API: export default function (rft) { rft.register(...) }',
      { file, field: 'default' },
    );
  const out: LoadedImpls = { registered: [], reward: new Map(), workflow: new Map(), environment: new Map() };
  try {
    await (mod.default as (api: CustomApi) => unknown)(makeApi(file, out));
  } catch (e) {
    if (e instanceof InputError) throw e;
    const at = fileLine(file, e);
    throw new InputError(`the default export threw: ${(e as Error)?.message ?? String(e)}`, {
      file,
      ...(at === file ? {} : { line: Number(at.slice(file.length + 1)) }),
      field: 'default',
    });
  }
  if (out.registered.length === 0)
    throw new InputError('the default export registered nothing (call rft.register(kind, name, impl))', {
      file,
      field: 'default',
    });
  return out;
}
