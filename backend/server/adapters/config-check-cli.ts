// What `rft run` would refuse in a schema-valid config, for the Problems panel before Start Training:
// names against the registries (reward, workflow, algorithm, sampler, ...) are checked by
// `rft run CONFIG --check` in a child process (that check loads the trainer's modules, which the
// server keeps out of its bundle), and the files the config names that do not exist (cheap, here).
// The CLI's answer is kept per file until the file changes (mtime, size).
import { noFileMessage } from '../../core/config-files.js';
import { existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { readYaml } from '../../core/yaml-safe.js';
import { specialKind } from '../../core/regular-file.js';
import { spawn } from 'node:child_process';
import { cliNodeArgs } from '../../core/package-root.js';

export interface PathIssue {
  path: string;
  message: string;
}

/** Files the config names (taskset / eval / experts paths, workflow.file, model.checkpoint, tokenizer.path) that are not there. */
export function missingFiles(text: string, configFile: string): PathIssue[] {
  const read = readYaml(text);
  const doc = read.ok ? read.value : undefined;
  if (!doc || typeof doc !== 'object') return [];
  const d = doc as Record<string, Record<string, unknown> | undefined>;
  const named: [string, unknown][] = [
    ['taskset.path', d.taskset?.path],
    ['eval.path', d.eval?.path],
    ['experts.path', d.experts?.path],
    ['workflow.file', d.workflow?.file],
    ['model.checkpoint', d.model?.checkpoint],
    ['tokenizer.path', d.tokenizer?.path],
  ];
  const out: PathIssue[] = [];
  for (const [path, v] of named) {
    // A URL or a hub name (org/name without a folder of that name) is not a file to check here.
    if (typeof v !== 'string' || !v || /^[a-z][a-z0-9+.-]*:\/\//i.test(v)) continue;
    const abs = isAbsolute(v) ? v : resolve(dirname(configFile), v);
    if (path === 'model.checkpoint' && !existsSync(abs) && /^[\w.-]+\/[\w.-]+$/.test(v)) continue;
    if (!existsSync(abs)) out.push({ path, message: noFileMessage(v, abs) });
    else {
      // A FIFO or a device would block the read or never end it (model.checkpoint and tokenizer.path may name folders).
      const kind = specialKind(abs);
      if (kind && !(kind === 'a folder' && (path === 'model.checkpoint' || path === 'tokenizer.path')))
        out.push({ path, message: `'${v}' is ${kind}, not a file (${abs})` });
    }
  }
  return out;
}

/** `rft run --check` in a child is stopped after this long (it reads every taskset the config names). */
export const CHECK_TIMEOUT_MS = 120_000;

const cache = new Map<string, { stamp: string; issues: PathIssue[] }>();

/** `rft run FILE --check`: each `field 'X': message` it prints, or its one error as `(config)`. */
export async function cliConfigIssues(file: string, cwd: string): Promise<PathIssue[]> {
  const st = statSync(file);
  const stamp = `${st.mtimeMs}:${st.size}`;
  const hit = cache.get(file);
  if (hit?.stamp === stamp) return hit.issues;
  const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((res, rej) => {
    const child = spawn(process.execPath, [...cliNodeArgs(), 'run', file, '--check', '--quiet'], {
      cwd,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    // The check reads the tasksets and the checkpoint's headers; a check that never ends says so.
    const timer = setTimeout(() => {
      err += `\nrft: rft run --check did not finish in ${CHECK_TIMEOUT_MS / 1000} s: stopped`;
      child.kill('SIGKILL');
    }, CHECK_TIMEOUT_MS);
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err.length < 1 << 20 ? (err += d) : undefined));
    child.on('error', (e) => (clearTimeout(timer), rej(e)));
    child.on('close', (c) => (clearTimeout(timer), res({ code: c, stderr: err })));
  });
  let issues: PathIssue[] = [];
  if (code !== 0) {
    // Log lines (`[time] WARN config: ...`, a renamed key) are not the refusal's problems.
    const refusal = stderr
      .split('\n')
      .filter((l) => !/^\[[^\]]+\] [A-Z]+ /.test(l))
      .join('\n');
    issues = [...refusal.matchAll(/field '([^']+)': ([^\n]*)/g)].map((m) => ({ path: m[1]!, message: m[2]!.trim() }));
    const own = stderr
      .split('\n')
      .filter((l) => l.startsWith('rft: '))
      .pop()
      ?.slice(5);
    if (!issues.length)
      issues = [
        {
          path: '(config)',
          message: own ?? (stderr.trim().split('\n').pop() || `rft run --check failed (exit code ${code})`),
        },
      ];
  }
  cache.set(file, { stamp, issues });
  return issues;
}
