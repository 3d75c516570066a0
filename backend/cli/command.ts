// The `rft` command line: each subcommand is one file under backend/cli/commands that calls `command(...)`.
import { Registry } from '../core/registry.js';

export interface ParsedArgs {
  /** Positional arguments after the command path. */
  positional: string[];
  /** --flag value / --flag=value / --bool. Repeated flags keep the last value; `all` keeps every value. */
  flags: Record<string, string | boolean>;
  all: Record<string, string[]>;
}

export interface CliCommand {
  /** e.g. 'tokenizer train' */
  name: string;
  usage: string;
  summary: string;
  /** Flags that take no value. */
  booleanFlags?: string[];
  /** Returns the process exit code. */
  run(args: ParsedArgs): Promise<number> | number;
}

export const commands = new Registry<CliCommand>('command');

export function command(c: CliCommand): CliCommand {
  return commands.register(c.name, c);
}

export function parseArgs(argv: string[], booleanFlags: string[] = []): ParsedArgs {
  const out: ParsedArgs = { positional: [], flags: {}, all: {} };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      out.positional.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      let key: string;
      let val: string | boolean;
      if (eq >= 0) {
        key = a.slice(2, eq);
        val = a.slice(eq + 1);
      } else {
        key = a.slice(2);
        const next = argv[i + 1];
        if (booleanFlags.includes(key) || next === undefined || next.startsWith('--')) val = true;
        else {
          val = next;
          i++;
        }
      }
      out.flags[key] = val;
      (out.all[key] ??= []).push(String(val));
    } else out.positional.push(a);
  }
  return out;
}

export function flagString(args: ParsedArgs, name: string): string | undefined {
  const v = args.flags[name];
  return typeof v === 'string' ? v : undefined;
}

export function flagNumber(args: ParsedArgs, name: string, dflt: number): number {
  const v = flagString(args, name);
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`--${name} expects a number, got '${v}'`);
  return n;
}
