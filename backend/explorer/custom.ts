// Custom workflows, reward functions and environments from the user's workspace: a .js, .mjs or .ts
// file whose default export receives a small API and calls `register(kind, name, impl)`.
//
//   export default function (rft) {
//     rft.register('reward', 'has_please', async (task, response) => ({ reward: response.includes('please') ? 1 : 0 }));
//   }
//
// TRUSTED CODE: the file runs with the backend's full rights (it is not sandboxed like
// model-written code); the extension only loads it in a trusted workspace. It runs in a worker thread
// of its own (user-code/host.ts): a `process.exit`, a synchronous loop, an uncaught error or a throw
// costs the call that met it (an infra_failure sample with the reason), never the run; its results,
// output, loading time, run of timeouts, signals and child processes are bounded too (user-code/host.ts).
// Everything is checked: a bad file gives an InputError naming the file and what is wrong, and the
// files around it still load. Registered names go into the global registries through a forwarding
// entry, so reloading an edited file replaces its implementation without a restart.
import { existsSync, readdirSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { InputError } from '../core/errors.js';
import type { Experience } from '../core/types.js';
import { environments, type Environment } from './environments/index.js';
import { rewardFns } from './rewards/index.js';
import type { RewardFn, RewardResult, Workflow } from './workflow.js';
import { workflows } from './workflows/index.js';
import { failedRollouts } from './user-code/failed-rollouts.js';
import { UserCodeHost } from './user-code/host.js';
import { CUSTOM_EXTENSIONS, type CustomKind } from './user-code/load.js';

export type { CustomKind } from './user-code/load.js';

export interface LoadedFile {
  file: string;
  registered: { kind: CustomKind; name: string }[];
}

export interface CustomLoadOptions {
  /** Longest one call into the file may run (time waiting on the model excluded); default 60 s. */
  timeoutMs?: number;
}

/** Which file first registered each `kind:name` (a name stays with its file across reloads). */
const owners = new Map<string, string>();
const current = {
  reward: new Map<string, { file: string; impl: RewardFn }>(),
  workflow: new Map<string, { file: string; impl: Workflow }>(),
  environment: new Map<string, { file: string; impl: Environment }>(),
};
/** The thread each loaded file runs in. */
const hosts = new Map<string, UserCodeHost>();

function validResult(file: string, name: string, r: unknown): RewardResult {
  if (typeof r === 'number' && Number.isFinite(r)) return { reward: r, status: 'ok' };
  if (
    r &&
    typeof r === 'object' &&
    typeof (r as RewardResult).reward === 'number' &&
    Number.isFinite((r as RewardResult).reward)
  ) {
    const o = r as RewardResult;
    return {
      reward: o.reward,
      status: o.status === 'infra_failure' ? 'infra_failure' : 'ok',
      details: o.details,
      reason: o.reason,
    };
  }
  // The user's scorer is broken, not the model's answer: never trained on.
  return {
    reward: 0,
    status: 'infra_failure',
    reason: `custom reward '${name}' (${file}) returned ${shown(r)}; expected a finite number or { reward: number }`,
  };
}

/** A returned value as the user wrote it: NaN and -Infinity by name (JSON would say `null`), cut to 80 characters. */
function shown(r: unknown): string {
  const mark = '\u0001';
  const json = JSON.stringify(r, (_k, v: unknown) =>
    typeof v === 'number' && !Number.isFinite(v)
      ? `${mark}${v}${mark}`
      : typeof v === 'bigint'
        ? `${mark}${v}n${mark}`
        : v,
  );
  if (json === undefined) return String(r);
  return json.replace(/"\\u0001([^"]*?)\\u0001"/g, '$1').slice(0, 80);
}

function checkExperiences(file: string, name: string, out: unknown): Experience[] {
  if (!Array.isArray(out))
    throw new Error(`custom workflow '${name}' (${file}) returned ${typeof out}; expected an array of experiences`);
  out.forEach((e: Partial<Experience>, i) => {
    const bad = (what: string) => new Error(`custom workflow '${name}' (${file}): experience ${i}: ${what}`);
    if (!e || typeof e !== 'object') throw bad('not an object');
    for (const k of ['id', 'taskId', 'groupId', 'runId'] as const)
      if (typeof e[k] !== 'string') throw bad(`${k} must be a string`);
    if (!Array.isArray(e.promptTokens) || !Array.isArray(e.responseTokens))
      throw bad('promptTokens and responseTokens must be arrays');
    if (!Array.isArray(e.actionMask) || e.actionMask.length !== e.responseTokens.length)
      throw bad('actionMask must have one entry per response token');
    if (!Array.isArray(e.logprobs) || (e.logprobs.length !== 0 && e.logprobs.length !== e.responseTokens.length))
      throw bad('logprobs must be empty or have one entry per response token');
    if (typeof e.modelVersion !== 'number') throw bad('modelVersion must be a number');
    if (typeof e.reward !== 'number' || !Number.isFinite(e.reward)) throw bad('reward must be a finite number');
    if (!['ok', 'invalid', 'infra_failure'].includes(e.status as string))
      throw bad(`status must be ok, invalid or infra_failure`);
  });
  return out as Experience[];
}

/** The explorer's entries for one registered name: each call goes to the file's thread. */
function proxy(host: UserCodeHost, kind: CustomKind, name: string): void {
  const file = host.file;
  if (kind === 'reward') {
    current.reward.set(name, {
      file,
      impl: async (t, r, c) => {
        let out: unknown;
        try {
          out = await host.callReward(name, t, r, c?.signal);
        } catch (e) {
          // The user's scorer crashed, hung or ended its thread: the run goes on, the sample is an infra failure (never a 0 trained on).
          return { reward: 0, status: 'infra_failure', reason: `custom reward '${name}' ${(e as Error).message}` };
        }
        return validResult(file, name, out);
      },
    });
    if (!rewardFns.has(name))
      rewardFns.register(name, async (t, r, c) => {
        const cur = current.reward.get(name);
        return cur
          ? cur.impl(t, r, c)
          : {
              reward: 0,
              status: 'infra_failure',
              reason: `custom reward '${name}' is no longer loaded (its file failed to reload)`,
            };
      });
  } else if (kind === 'workflow') {
    current.workflow.set(name, {
      file,
      impl: {
        name,
        run: async (tasks, ctx) => {
          let out: unknown;
          try {
            out = await host.callWorkflow(name, tasks, ctx);
          } catch (e) {
            return failedRollouts(tasks, ctx, `custom workflow '${name}' ${(e as Error).message}`);
          }
          try {
            return checkExperiences(file, name, out);
          } catch (e) {
            return failedRollouts(tasks, ctx, (e as Error).message);
          }
        },
      },
    });
    if (!workflows.has(name))
      workflows.register(name, { name, run: (t, c) => live(current.workflow, 'workflow', name).run(t, c) });
  } else {
    const fail = (e: unknown) => new Error(`custom environment '${name}' ${(e as Error).message}`);
    current.environment.set(name, {
      file,
      impl: {
        name,
        create: (task) => {
          let session: number;
          try {
            session = host.envCreate(name, task);
          } catch (e) {
            throw fail(e);
          }
          return {
            step: (action) => {
              try {
                return host.envStep(session, action);
              } catch (e) {
                throw fail(e);
              }
            },
          };
        },
      },
    });
    if (!environments.has(name))
      environments.register(name, { name, create: (t) => live(current.environment, 'environment', name).create(t) });
  }
}

function live<T>(m: Map<string, { impl: T }>, kind: string, name: string): T {
  const cur = m.get(name);
  if (!cur) throw new Error(`custom ${kind} '${name}' is no longer loaded (its file failed to reload)`);
  return cur.impl;
}

/** Load one workspace file (in a thread of its own) and register what it registers. Throws InputError naming the file. */
export async function loadCustomFile(path: string, opts: CustomLoadOptions = {}): Promise<LoadedFile> {
  const file = resolve(path);
  if (!existsSync(file)) throw new InputError('file not found', { file });
  if (!CUSTOM_EXTENSIONS.has(extname(file)))
    throw new InputError(`custom code must be a ${[...CUSTOM_EXTENSIONS].join(', ')} file`, { file });
  const host = new UserCodeHost(file, opts.timeoutMs);
  let registered: LoadedFile['registered'];
  try {
    registered = await host.start();
    // Names are checked here, against the explorer's registries: a file that fails keeps nothing it registered.
    for (const { kind, name } of registered) {
      const where = { file, field: `register('${kind}', '${name}')` };
      const registry = kind === 'reward' ? rewardFns : kind === 'workflow' ? workflows : environments;
      const owner = owners.get(`${kind}:${name}`);
      if (registry.has(name) && !owner)
        throw new InputError(`'${name}' is already a built-in ${kind}; choose another name`, where);
      if (owner && owner !== file) throw new InputError(`'${name}' is already registered by ${owner}`, where);
    }
  } catch (e) {
    host.close();
    throw e;
  }
  for (const kind of ['reward', 'workflow', 'environment'] as const)
    for (const [n, v] of [...current[kind]]) if (v.file === file) current[kind].delete(n);
  hosts.get(file)?.close();
  hosts.set(file, host);
  for (const { kind, name } of registered) {
    proxy(host, kind, name);
    owners.set(`${kind}:${name}`, file);
  }
  return { file, registered };
}

/** Load every custom file in a folder (e.g. `.rft/extensions`); a bad file is reported, the others load. */
export async function loadCustomDir(
  dir: string,
  opts: CustomLoadOptions = {},
): Promise<{ loaded: LoadedFile[]; errors: InputError[] }> {
  const loaded: LoadedFile[] = [];
  const errors: InputError[] = [];
  if (!existsSync(dir)) return { loaded, errors };
  for (const name of readdirSync(dir).sort()) {
    if (!CUSTOM_EXTENSIONS.has(extname(name)) || name.endsWith('.d.ts')) continue;
    try {
      loaded.push(await loadCustomFile(join(dir, name), opts));
    } catch (e) {
      errors.push(e instanceof InputError ? e : new InputError((e as Error).message, { file: join(dir, name) }));
    }
  }
  return { loaded, errors };
}
