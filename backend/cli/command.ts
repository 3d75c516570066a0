// The `rft` command line: each subcommand is one file under backend/cli/commands that calls `command(...)`.
import { errorKind, InputError } from '../core/errors.js';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { closest } from '../core/closest.js';
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
  /**
   * Flags that take a value. A command that declares them (with booleanFlags) gets strict parsing:
   * any other flag is an error, and a value flag without a value is an error.
   */
  flags?: string[];
  /** Returns the process exit code. */
  run(args: ParsedArgs): Promise<number> | number;
}

export const commands = new Registry<CliCommand>('command');

export function command(c: CliCommand): CliCommand {
  return commands.register(c.name, c);
}

/** Parses a command's arguments: strictly when it declares its flags (see CliCommand.flags). */
export function parseFor(c: CliCommand, argv: string[]): ParsedArgs {
  return parseArgs(argv, c.booleanFlags, c.flags ? { valueFlags: c.flags, command: c.name } : undefined);
}

export function parseArgs(
  argv: string[],
  booleanFlags: string[] = [],
  strict?: { valueFlags: string[]; command: string },
): ParsedArgs {
  const out: ParsedArgs = { positional: [], flags: {}, all: {} };
  const known = strict && new Set([...strict.valueFlags, ...booleanFlags]);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      out.positional.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const key = eq >= 0 ? a.slice(2, eq) : a.slice(2);
      // An unknown flag is named before anything else (it might otherwise swallow the next word as its value).
      if (known && !known.has(key))
        throw new InputError(
          `rft ${strict.command}: unknown flag --${key}${suggest(key, [...known])} (flags: ${[...known].map((k) => `--${k}`).join(' ') || 'none'})`,
        );
      let val: string | boolean;
      if (eq >= 0) val = a.slice(eq + 1);
      else {
        const next = argv[i + 1];
        if (booleanFlags.includes(key) || (!strict && (next === undefined || next.startsWith('--')))) val = true;
        else if (next === undefined || next.startsWith('--'))
          throw new InputError(`rft ${strict!.command}: --${key} needs a value`);
        else {
          val = next;
          i++;
        }
      }
      if (strict && booleanFlags.includes(key) && typeof val === 'string')
        throw new InputError(`rft ${strict.command}: --${key} takes no value`);
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

/** A decimal number written out in full ('12', '-3', '0.5', '1e-3'); not '', '0x10', 'Infinity', '12abc'. */
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

export function flagNumber(args: ParsedArgs, name: string, dflt: number): number {
  const raw = args.flags[name];
  if (raw === undefined) return dflt;
  if (typeof raw !== 'string') throw new InputError(`--${name} expects a number, got no value`);
  const v = raw.trim();
  const n = Number(v);
  if (!NUMBER.test(v) || !Number.isFinite(n)) throw new InputError(`--${name} expects a number, got '${raw}'`);
  return n;
}

function suggest(key: string, known: string[]): string {
  const near = closest(key, known);
  return near ? `: did you mean --${near}?` : '';
}

/** `--workspace DIR` (default: the current folder) for commands that look at runs: it must exist (a typo creates nothing). */
export function existingWorkspace(args: ParsedArgs): string {
  const given = flagString(args, 'workspace');
  const ws = resolve(given ?? process.cwd());
  let isDir = false;
  try {
    isDir = statSync(ws).isDirectory();
  } catch {
    // missing
  }
  if (!isDir) throw new InputError(`--workspace ${given}: no such folder (${ws})`);
  return ws;
}

/**
 * What `rft` prints for the error a command ended with. An error of a kind (input, conflict,
 * infrastructure: core/errors.ts) is for the user and is its message alone; a bare Error is a bug,
 * so the line of code that threw it follows. `debug` (RFT_DEBUG): the whole stack, always.
 */
export function errorReport(err: unknown, debug = false): string {
  if (!(err instanceof Error)) return `rft: ${String(err)}`;
  const head = `rft: ${err.message}`;
  if (debug) return `${head}\n${err.stack ?? ''}`;
  if (errorKind(err) !== undefined) return head;
  const at = (err.stack ?? '').split('\n').find((l) => /^\s+at /.test(l));
  return at ? `${head}\n${at.trim()} (an internal error: RFT_DEBUG=1 prints the whole stack)` : head;
}
