// `rft model info` / `rft model export` run as child processes of the server: the same code the CLI
// runs, and the tensor engine (wasm, weights) stays out of the server's process and bundle (fast
// start; a big export never blocks other requests). The last stdout line is the command's JSON.
import { spawn } from 'node:child_process';
import type { CancellationToken } from 'vscode-jsonrpc/node';
import { cliNodeArgs } from '../../core/package-root.js';
import { InputError } from '../../core/errors.js';

export class ModelCommandError extends InputError {}

export function runModelCommand(
  args: string[],
  opts: { cwd: string; token?: CancellationToken; onLine?: (line: string) => void },
): Promise<Record<string, unknown>> {
  return runCliCommand('model', args, opts);
}

/** `rft CMD ARGS...` (e.g. `reward-model train ...`) as a child process; the last stdout line is its JSON. */
export function runCliCommand(
  cmd: string,
  args: string[],
  opts: { cwd: string; token?: CancellationToken; onLine?: (line: string) => void },
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...cliNodeArgs(), ...cmd.split(' '), ...args], {
      cwd: opts.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    let part = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      // Whole lines only (a chunk may end inside one).
      const lines = (part + d).split('\n');
      part = lines.pop()!;
      for (const l of lines) if (l.trim()) opts.onLine?.(l);
    });
    const cancel = opts.token?.onCancellationRequested(() => child.kill('SIGTERM'));
    child.on('error', (e) => reject(e));
    child.on('close', (code, sig) => {
      cancel?.dispose();
      if (code === 0) {
        const last = out.trim().split('\n').pop() ?? '';
        try {
          return resolve(JSON.parse(last) as Record<string, unknown>);
        } catch {
          return reject(new Error(`rft ${cmd} ${args[0]} printed no JSON result: ${last.slice(0, 200)}`));
        }
      }
      if (sig) return reject(new Error(`rft ${cmd} ${args[0]} was stopped (${sig})`));
      // The CLI's own message (`rft: FILE: field 'architectures': ...`), without the prefix.
      const msg =
        err
          .trim()
          .split('\n')
          .filter((l) => l.startsWith('rft: '))
          .pop()
          ?.slice(5) ?? err.trim().split('\n').slice(-3).join('\n');
      reject(new ModelCommandError(msg || `rft ${cmd} ${args[0]} failed (exit code ${code})`));
    });
  });
}
