// Custom workflows, reward functions and environments from the user's workspace: a .js, .mjs or .ts
// file whose default export receives a small API and calls `register(kind, name, impl)`.
//
//   export default function (rft) {
//     rft.register('reward', 'has_please', async (task, response) => ({ reward: response.includes('please') ? 1 : 0 }));
//   }
//
// TRUSTED CODE: the file runs inside the backend process with its full rights (it is not sandboxed
// like model-written code). The extension only loads it in a trusted workspace.
// Everything is checked: a bad file gives an InputError naming the file and what is wrong, and the
// files around it still load. Registered names go into the global registries through a forwarding
// entry, so reloading an edited file replaces its implementation without a restart.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InputError } from '../core/errors.js';
import type { Experience, Task } from '../core/types.js';
import { environments, type Environment } from './environments/index.js';
import { rewardFns } from './rewards/index.js';
import { workflows, type RewardFn, type RewardResult, type Workflow, type WorkflowContext } from './workflow.js';

export type CustomKind = 'reward' | 'workflow' | 'environment';

export interface CustomApi {
  readonly apiVersion: 1;
  register(kind: CustomKind, name: string, impl: unknown): void;
}

export interface LoadedFile {
  file: string;
  registered: { kind: CustomKind; name: string }[];
}

const EXTENSIONS = new Set(['.js', '.mjs', '.ts', '.mts']);
const NAME = /^[A-Za-z][\w.-]{0,63}$/;

/** Current implementation behind each custom name, and the file it came from. */
/** Which file first registered each `kind:name` (a name stays with its file across reloads). */
const owners = new Map<string, string>();
const current = { reward: new Map<string, { file: string; impl: RewardFn }>(), workflow: new Map<string, { file: string; impl: Workflow }>(), environment: new Map<string, { file: string; impl: Environment }>() };

function validResult(file: string, name: string, r: unknown): RewardResult {
  if (typeof r === 'number' && Number.isFinite(r)) return { reward: r, status: 'ok' };
  if (r && typeof r === 'object' && typeof (r as RewardResult).reward === 'number' && Number.isFinite((r as RewardResult).reward)) {
    const o = r as RewardResult;
    return { reward: o.reward, status: o.status === 'infra_failure' ? 'infra_failure' : 'ok', details: o.details, reason: o.reason };
  }
  // The user's scorer is broken, not the model's answer: never trained on.
  return { reward: 0, status: 'infra_failure', reason: `custom reward '${name}' (${file}) returned ${JSON.stringify(r)?.slice(0, 80)}; expected a finite number or { reward: number }` };
}

function checkExperiences(file: string, name: string, out: unknown): Experience[] {
  if (!Array.isArray(out)) throw new Error(`custom workflow '${name}' (${file}) returned ${typeof out}; expected an array of experiences`);
  out.forEach((e: Partial<Experience>, i) => {
    const bad = (what: string) => new Error(`custom workflow '${name}' (${file}): experience ${i}: ${what}`);
    if (!e || typeof e !== 'object') throw bad('not an object');
    for (const k of ['id', 'taskId', 'groupId', 'runId'] as const) if (typeof e[k] !== 'string') throw bad(`${k} must be a string`);
    if (!Array.isArray(e.promptTokens) || !Array.isArray(e.responseTokens)) throw bad('promptTokens and responseTokens must be arrays');
    if (!Array.isArray(e.actionMask) || e.actionMask.length !== e.responseTokens.length) throw bad('actionMask must have one entry per response token');
    if (!Array.isArray(e.logprobs) || (e.logprobs.length !== 0 && e.logprobs.length !== e.responseTokens.length)) throw bad('logprobs must be empty or have one entry per response token');
    if (typeof e.modelVersion !== 'number') throw bad('modelVersion must be a number');
    if (typeof e.reward !== 'number' || !Number.isFinite(e.reward)) throw bad('reward must be a finite number');
    if (!['ok', 'invalid', 'infra_failure'].includes(e.status as string)) throw bad(`status must be ok, invalid or infra_failure`);
  });
  return out as Experience[];
}

function makeApi(file: string, registered: LoadedFile['registered']): CustomApi {
  return {
    apiVersion: 1,
    register(kind: CustomKind, name: string, impl: unknown) {
      const where = { file, field: `register('${String(kind)}', '${String(name)}')` };
      if (kind !== 'reward' && kind !== 'workflow' && kind !== 'environment') throw new InputError(`kind must be 'reward', 'workflow' or 'environment'`, where);
      if (typeof name !== 'string' || !NAME.test(name)) throw new InputError('name must be letters, digits, _ . - (starting with a letter, at most 64)', where);
      const registry = kind === 'reward' ? rewardFns : kind === 'workflow' ? workflows : environments;
      const owner = owners.get(`${kind}:${name}`);
      if (registry.has(name) && !owner) throw new InputError(`'${name}' is already a built-in ${kind}; choose another name`, where);
      if (owner && owner !== file) throw new InputError(`'${name}' is already registered by ${owner}`, where);
      if (registered.some((r) => r.kind === kind && r.name === name)) throw new InputError(`'${name}' is registered twice in this file`, where);
      if (kind === 'reward') {
        if (typeof impl !== 'function') throw new InputError('a reward must be a function (task, response) => number | { reward }', where);
        const fn = impl as (t: Task, r: string, c?: { signal?: AbortSignal }) => unknown;
        current.reward.set(name, {
          file,
          impl: async (t, r, c) => {
            let out: unknown;
            try {
              out = await fn(t, r, c);
            } catch (e) {
              // The user's scorer crashed: the run goes on, the sample is an infra failure (never a 0 trained on).
              return { reward: 0, status: 'infra_failure', reason: `custom reward '${name}' threw at ${fileLine(file, e)}: ${(e as Error)?.message ?? String(e)}` };
            }
            return validResult(file, name, out);
          },
        });
        if (!registry.has(name)) rewardFns.register(name, async (t, r, c) => {
          const cur = current.reward.get(name);
          return cur ? cur.impl(t, r, c) : { reward: 0, status: 'infra_failure', reason: `custom reward '${name}' is no longer loaded (its file failed to reload)` };
        });
      } else if (kind === 'workflow') {
        const run = typeof impl === 'function' ? impl : (impl as { run?: unknown } | null)?.run;
        if (typeof run !== 'function') throw new InputError('a workflow must be a function (tasks, ctx) => experiences, or an object with run(tasks, ctx)', where);
        const r = run as (t: Task[], c: WorkflowContext) => unknown;
        const self = typeof impl === 'function' ? undefined : impl;
        current.workflow.set(name, { file, impl: { name, run: async (t, c) => checkExperiences(file, name, await r.call(self, t, c)) } });
        if (!registry.has(name)) workflows.register(name, { name, run: (t, c) => live(current.workflow, 'workflow', name).run(t, c) });
      } else {
        const create = (impl as { create?: unknown } | null)?.create;
        if (typeof create !== 'function') throw new InputError('an environment must be an object with create(task) returning { step(action) }', where);
        current.environment.set(name, { file, impl: { name, create: (t) => (create as Environment['create']).call(impl, t) } });
        if (!registry.has(name)) environments.register(name, { name, create: (t) => live(current.environment, 'environment', name).create(t) });
      }
      owners.set(`${kind}:${name}`, file);
      registered.push({ kind, name });
    },
  };
}

function live<T>(m: Map<string, { impl: T }>, kind: string, name: string): T {
  const cur = m.get(name);
  if (!cur) throw new Error(`custom ${kind} '${name}' is no longer loaded (its file failed to reload)`);
  return cur.impl;
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

/** Load one workspace file and register what it registers. Throws InputError naming the file. */
export async function loadCustomFile(path: string): Promise<LoadedFile> {
  const file = resolve(path);
  if (!existsSync(file)) throw new InputError('file not found', { file });
  if (!EXTENSIONS.has(extname(file))) throw new InputError(`custom code must be a ${[...EXTENSIONS].join(', ')} file`, { file });
  let mod: { default?: unknown };
  try {
    mod = (await importFile(file)) as { default?: unknown };
  } catch (e) {
    if (e instanceof InputError) throw e;
    const at = fileLine(file, e);
    const line = e instanceof SyntaxError ? syntaxErrorLine(file) : at === file ? undefined : Number(at.slice(file.length + 1));
    throw new InputError(`could not load: ${(e as Error).message.split('\n')[0]}`, { file, ...(line ? { line } : {}) });
  }
  // A .ts file outside an ESM package is compiled as CommonJS: its default export sits one level down.
  const inner = (mod.default as { default?: unknown } | undefined)?.default;
  if (typeof mod.default !== 'function' && typeof inner === 'function') mod = { default: inner };
  if (typeof mod.default !== 'function') throw new InputError('the default export must be a function that receives the API: export default function (rft) { rft.register(...) }', { file, field: 'default' });
  // A file that fails half-way keeps nothing it registered before failing.
  const before = { reward: new Map(current.reward), workflow: new Map(current.workflow), environment: new Map(current.environment) };
  const registered: LoadedFile['registered'] = [];
  for (const kind of ['reward', 'workflow', 'environment'] as const) for (const [n, v] of [...current[kind]]) if (v.file === file) current[kind].delete(n);
  try {
    await (mod.default as (api: CustomApi) => unknown)(makeApi(file, registered));
    if (registered.length === 0) throw new InputError('the default export registered nothing (call rft.register(kind, name, impl))', { file, field: 'default' });
  } catch (e) {
    for (const kind of ['reward', 'workflow', 'environment'] as const) {
      current[kind].clear();
      for (const [n, v] of before[kind] as Map<string, never>) current[kind].set(n, v);
    }
    if (e instanceof InputError) throw e;
    const at = fileLine(file, e);
    throw new InputError(`the default export threw: ${(e as Error).message}`, { file, ...(at === file ? {} : { line: Number(at.slice(file.length + 1)) }), field: 'default' });
  }
  return { file, registered };
}

/** Load every custom file in a folder (e.g. `.rft/extensions`); a bad file is reported, the others load. */
export async function loadCustomDir(dir: string): Promise<{ loaded: LoadedFile[]; errors: InputError[] }> {
  const loaded: LoadedFile[] = [];
  const errors: InputError[] = [];
  if (!existsSync(dir)) return { loaded, errors };
  for (const name of readdirSync(dir).sort()) {
    if (!EXTENSIONS.has(extname(name)) || name.endsWith('.d.ts')) continue;
    try {
      loaded.push(await loadCustomFile(join(dir, name)));
    } catch (e) {
      errors.push(e instanceof InputError ? e : new InputError((e as Error).message, { file: join(dir, name) }));
    }
  }
  return { loaded, errors };
}

/** Where a custom name came from (for error messages and the UI), if it is custom. */
export function customSource(kind: CustomKind, name: string): string | undefined {
  return current[kind].get(name)?.file;
}
