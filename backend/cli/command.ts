// The `rft` command line: each subcommand is declared with `command(...)` in a file under
// backend/cli/commands (and listed in its index.ts), with its flags declared once (cli/flags.ts):
// parser, types and help all come from that declaration.
import { errorKind, InputError } from '../core/errors.js';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { flagTable, parseFlags, synopsis, UsageError, type FlagDecls, type FlagValues } from './flags.js';

export interface ParsedArgs<F extends FlagDecls = FlagDecls> {
  /** Positional arguments after the command path. */
  positional: string[];
  flags: FlagValues<F>;
  /** The command's usage line (`rft NAME ARGS FLAGS`), for its own "usage:" errors. */
  usage: string;
}

export interface CliCommand<F extends FlagDecls = FlagDecls> {
  /** e.g. 'tokenizer train' */
  name: string;
  /** The positional arguments as the usage line shows them ('RUN_OR_DB ID'); the flags come from `flags`. */
  args?: string;
  summary: string;
  flags: F;
  /** The command's old name: `rft OLD` warns and runs this one. */
  renamedFrom?: string;
  /** Returns the process exit code. */
  run(args: ParsedArgs<F>): Promise<number> | number;
}

/**
 * A command with its flags' types checked against its `run`; returned with the common signature so
 * that commands/index.ts can list it (the list is the registry: no command registers itself).
 */
export function command<const F extends FlagDecls>(c: CliCommand<F>): CliCommand {
  return c as unknown as CliCommand;
}

/** `rft NAME ARGS` (what the command list shows). */
export const nameAndArgs = (c: CliCommand): string => (c.args ? `${c.name} ${c.args}` : c.name);

/** `rft NAME ARGS --flag V [--flag V] ...`, generated from the declaration. */
function usageLine(c: CliCommand): string {
  const flags = synopsis(c.flags);
  return `rft ${nameAndArgs(c)}${flags ? ` ${flags}` : ''}`;
}

/** What `rft NAME --help` prints. */
export function commandHelp(c: CliCommand): string {
  const table = flagTable(c.flags);
  return `usage: ${usageLine(c)}\n\n${c.summary}${table.length ? `\n\nflags:\n${table.join('\n')}` : ''}`;
}

/** Parses a command's arguments against its declared flags (UsageError on anything else). */
export function parseFor<F extends FlagDecls>(c: CliCommand<F>, argv: string[]): ParsedArgs<F> {
  const usage = usageLine(c as unknown as CliCommand);
  return { ...parseFlags(c.name, c.flags, argv, usage), usage };
}

/** The `--workspace DIR` flag of the commands that look at runs. */
export const WORKSPACE_FLAG = {
  type: 'string',
  value: 'DIR',
  description: 'the workspace whose runs are meant (default: the current folder)',
} as const;

/** `--workspace DIR` (default: the current folder) for commands that look at runs: it must exist (a typo creates nothing). */
export function existingWorkspace(given: string | undefined): string {
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

/** The exit code of an error a command ended with: 2 for a command line the parser refused. */
export const exitCodeOf = (err: unknown): number => (err instanceof UsageError ? 2 : 1);

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
