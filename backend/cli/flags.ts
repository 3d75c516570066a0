// A command's flags, declared once: the declaration is what node:util's parseArgs reads, the type of
// the parsed values (FlagValues: `flags.port` is `number | undefined`, `flags.force` is `boolean`, a
// misspelt name does not compile) and the help text (name, value, description, default).
import { parseArgs } from 'node:util';
import { InputError } from '../core/errors.js';
import { closest } from '../core/closest.js';

interface Described {
  description: string;
}
export interface BooleanFlag extends Described {
  type: 'boolean';
}
export interface StringFlag extends Described {
  type: 'string';
  /** The value's name in the help ('DIR'). */
  value?: string;
  default?: string;
  /** Refused before the command runs when missing. */
  required?: true;
  /** The only values taken; the parsed value is typed as their union. */
  choices?: readonly string[];
}
export interface NumberFlag extends Described {
  type: 'number';
  value?: string;
  default?: number;
  required?: true;
}
export type FlagDecl = BooleanFlag | StringFlag | NumberFlag;
export type FlagDecls = Readonly<Record<string, FlagDecl>>;

type ValueOf<D> = D extends { type: 'boolean' }
  ? boolean
  : D extends { type: 'number' }
    ? number
    : D extends { choices: readonly (infer C)[] }
      ? C
      : string;
type AlwaysSet<D> = D extends { type: 'boolean' } | { default: unknown } | { required: true } ? true : false;
/** The parsed flags of a declaration: a value flag without a default or `required` may be undefined. */
export type FlagValues<F extends FlagDecls> = {
  readonly [K in keyof F]: AlwaysSet<F[K]> extends true ? ValueOf<F[K]> : ValueOf<F[K]> | undefined;
};

/** A command line the parser refuses (unknown flag, missing value, bad number...): `rft` exits 2. */
export class UsageError extends InputError {}

/** A decimal number written out in full ('12', '-3', '0.5', '1e-3'); not '', '0x10', 'Infinity', '12abc'. */
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

function parseNumber(name: string, raw: string): number {
  const v = raw.trim();
  const n = Number(v);
  if (!NUMBER.test(v) || !Number.isFinite(n)) throw new UsageError(`--${name} expects a number, got '${raw}'`);
  return n;
}

/** 'a', 'a or b', 'a, b or c' */
const orList = (xs: readonly string[]) =>
  xs.length < 2 ? xs.join('') : `${xs.slice(0, -1).join(', ')} or ${xs.at(-1)}`;

interface ParsedFlags<F extends FlagDecls> {
  positional: string[];
  flags: FlagValues<F>;
}

/**
 * `--flag value`, `--flag=value`, `--bool`; `--` ends the flags; a repeated flag keeps its last value.
 * A word with a single dash ('-', '-3') is an argument, as before parseArgs. `usage` ends the
 * message of a missing required flag.
 */
export function parseFlags<F extends FlagDecls>(command: string, decls: F, argv: string[], usage = ''): ParsedFlags<F> {
  const options = Object.fromEntries(
    Object.entries(decls).map(([k, d]) => [
      k,
      { type: d.type === 'boolean' ? ('boolean' as const) : ('string' as const) },
    ]),
  );
  // Not strict: parseArgs's own errors name no close flag and refuse '--seed -3'; the checks are below.
  const { tokens } = parseArgs({ args: argv, options, strict: false, allowPositionals: true, tokens: true });
  const positional: string[] = [];
  const raw: Record<string, string | true> = {};
  let shortAt = -1;
  const fail = (msg: string) => new UsageError(`rft ${command}: ${msg}`);
  for (const t of tokens) {
    if (t.kind === 'positional') positional.push(t.value);
    if (t.kind !== 'option') continue;
    if (!t.rawName.startsWith('--')) {
      // '-abc' comes as three tokens of one index: the word once, as written.
      if (t.index !== shortAt) positional.push(argv[t.index]!);
      shortAt = t.index;
      continue;
    }
    const d = decls[t.name];
    if (!d) {
      const near = closest(t.name, Object.keys(decls));
      const all = Object.keys(decls).map((k) => `--${k}`);
      throw fail(
        `unknown flag --${t.name}${near ? `: did you mean --${near}?` : ''} (flags: ${all.join(' ') || 'none'})`,
      );
    }
    if (d.type === 'boolean') {
      if (t.value !== undefined) throw fail(`--${t.name} takes no value`);
      raw[t.name] = true;
    } else {
      // `--workspace --quiet`: a forgotten value, not a value that starts with '--' (that is `--workspace=--x`).
      if (t.value === undefined || (!t.inlineValue && t.value.startsWith('--')))
        throw fail(`--${t.name} needs a value`);
      raw[t.name] = t.value;
    }
  }
  const flags: Record<string, unknown> = {};
  for (const [name, d] of Object.entries(decls)) {
    const v = raw[name];
    if (d.type === 'boolean') flags[name] = v === true;
    else if (v === '' && d.required) throw fail(`--${name} needs a value`);
    else if (v === undefined) {
      if (d.required) throw fail(`--${name} is required${usage ? `\nusage: ${usage}` : ''}`);
      flags[name] = d.default;
    } else if (d.type === 'number') flags[name] = parseNumber(name, v as string);
    else if (d.choices && !d.choices.includes(v as string))
      throw new UsageError(`--${name} must be ${orList(d.choices)}, got '${v}'`);
    else flags[name] = v;
  }
  return { positional, flags: flags as FlagValues<F> };
}

const valueName = (d: StringFlag | NumberFlag) =>
  d.value ?? (d.type === 'string' && d.choices ? d.choices.join('|') : d.type === 'number' ? 'N' : 'VALUE');

/** `--out DIR [--seed N] [--json]`: the flags part of a usage line. */
export function synopsis(decls: FlagDecls): string {
  return Object.entries(decls)
    .map(([k, d]) => {
      const s = d.type === 'boolean' ? `--${k}` : `--${k} ${valueName(d)}`;
      return d.type !== 'boolean' && d.required ? s : `[${s}]`;
    })
    .join(' ');
}

/** One line per flag: name and value, description, default. */
export function flagTable(decls: FlagDecls): string[] {
  const rows = Object.entries(decls).map(([k, d]) => {
    const left = d.type === 'boolean' ? `--${k}` : `--${k} ${valueName(d)}`;
    const notes = [
      d.type !== 'boolean' && d.required ? 'required' : '',
      d.type !== 'boolean' && d.default !== undefined ? `default: ${d.default}` : '',
    ]
      .filter(Boolean)
      .join('; ');
    return [left, d.description + (notes ? ` (${notes})` : '')] as const;
  });
  const w = Math.min(34, Math.max(0, ...rows.map(([l]) => l.length)));
  return rows.map(([l, r]) => `  ${l.padEnd(w)}  ${r}`);
}
