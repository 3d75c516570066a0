// Finds the Node.js that runs the backend: the `rftStudio.nodePath` setting, else `node` on PATH;
// checks its version (the backend needs Node >= 20). No 'vscode' import: unit-testable as is.
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

export const MIN_NODE_MAJOR = 20;

export type NodeLookup =
  | { ok: true; path: string; version: string }
  | { ok: false; reason: 'not-found' | 'too-old' | 'broken'; path?: string; version?: string; message: string };

export interface NodeFinderEnv {
  PATH?: string;
  platform: NodeJS.Platform;
  isExecutable(path: string): boolean;
  version(path: string): Promise<string>;
}

export const realEnv: NodeFinderEnv = {
  PATH: process.env.PATH,
  platform: process.platform,
  isExecutable(p) {
    try {
      accessSync(p, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  },
  version: (p) =>
    new Promise((res, rej) =>
      execFile(p, ['--version'], { timeout: 10_000 }, (err, stdout) => (err ? rej(err) : res(String(stdout).trim()))),
    ),
};

export function searchPath(env: Pick<NodeFinderEnv, 'PATH' | 'platform' | 'isExecutable'>): string | undefined {
  const names = env.platform === 'win32' ? ['node.exe', 'node.cmd'] : ['node'];
  for (const dir of (env.PATH ?? '').split(env.platform === 'win32' ? ';' : delimiter)) {
    if (!dir) continue;
    for (const n of names) {
      const p = join(dir, n);
      if (env.isExecutable(p)) return p;
    }
  }
  return undefined;
}

export function parseMajor(version: string): number | undefined {
  const m = /^v?(\d+)\./.exec(version.trim());
  return m ? Number(m[1]) : undefined;
}

export async function findNode(setting: string | undefined, env: NodeFinderEnv = realEnv): Promise<NodeLookup> {
  const configured = setting?.trim();
  let path: string | undefined;
  if (configured) {
    path = isAbsolute(configured) ? configured : (searchPath({ ...env, PATH: undefined }) ?? configured);
    if (!env.isExecutable(path)) {
      return {
        ok: false,
        reason: 'not-found',
        path,
        message: `The Node.js set in rftStudio.nodePath (${configured}) was not found or is not executable.`,
      };
    }
  } else {
    path = searchPath(env);
    if (!path) {
      return {
        ok: false,
        reason: 'not-found',
        message: `No Node.js found on PATH. RFT Studio's backend needs Node.js ${MIN_NODE_MAJOR} or newer: install it or set rftStudio.nodePath.`,
      };
    }
  }
  let version: string;
  try {
    version = await env.version(path);
  } catch (err) {
    return {
      ok: false,
      reason: 'broken',
      path,
      message: `${path} --version failed: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  const major = parseMajor(version);
  if (major === undefined || major < MIN_NODE_MAJOR) {
    return {
      ok: false,
      reason: 'too-old',
      path,
      version,
      message: `Node.js at ${path} is ${version}; RFT Studio's backend needs ${MIN_NODE_MAJOR} or newer. Set rftStudio.nodePath to a newer one.`,
    };
  }
  return { ok: true, path, version };
}
