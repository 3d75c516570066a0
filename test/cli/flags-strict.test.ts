// CLI flags are checked: an unknown flag is an error (with the close name), a number flag must be
// a number written out in full, a value flag needs its value, and commands that look at runs do not
// create a --workspace that does not exist.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFlags, UsageError } from '../../backend/cli/flags.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const rft = (...args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'backend/cli.ts'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });
const DECLS = {
  workspace: { type: 'string', description: 'w' },
  budget: { type: 'number', description: 'b' },
  quiet: { type: 'boolean', description: 'q' },
} as const;
const strict = (argv: string[]) => parseFlags('run', DECLS, argv);

test('strict parsing: unknown flags, a value flag without value, a boolean with a value', () => {
  assert.throws(
    () => strict(['c.yaml', '--workspce', 'x']),
    /rft run: unknown flag --workspce: did you mean --workspace\?/,
  );
  assert.throws(() => strict(['--tcp']), /unknown flag --tcp \(flags: --workspace --budget --quiet\)/);
  assert.throws(() => strict(['--workspace']), /--workspace needs a value/);
  assert.throws(() => strict(['--workspace', '--quiet']), /--workspace needs a value/);
  assert.throws(() => strict(['--quiet=yes']), /--quiet takes no value/);
  assert.throws(() => strict(['--tcp']), UsageError);
  assert.deepEqual(strict(['c.yaml', '--workspace=w', '--quiet']), {
    positional: ['c.yaml'],
    flags: { workspace: 'w', budget: undefined, quiet: true },
  });
});

test('--flag value and --flag=value; the last of a repeated flag; single-dash words and words after -- are arguments', () => {
  assert.deepEqual(strict(['--workspace', 'a', 'x', '--workspace=b']).flags.workspace, 'b');
  assert.deepEqual(strict(['--budget', '-3']).flags.budget, -3);
  assert.deepEqual(strict(['--workspace=--odd']).flags.workspace, '--odd');
  assert.deepEqual(strict(['-', '-3', '-abc', 'x', '--', '--quiet', '--nope']).positional, [
    '-',
    '-3',
    '-abc',
    'x',
    '--quiet',
    '--nope',
  ]);
  assert.equal(strict(['--', '--quiet']).flags.quiet, false);
});

test('numbers are parsed strictly', () => {
  const n = (v: string) => strict(['--budget', v]).flags.budget;
  assert.equal(n('12'), 12);
  assert.equal(n('0.5'), 0.5);
  assert.equal(n('1e-3'), 0.001);
  assert.equal(n('-3'), -3);
  for (const bad of ['abc', '12abc', '0x10', 'Infinity', 'NaN', '', ' ', '1,5'])
    assert.throws(() => n(bad), /--budget expects a number/, bad);
  assert.throws(() => strict(['--budget']), /--budget needs a value/);
});

test('defaults, required flags and choices come from the declaration, and so do the types', () => {
  const decls = {
    out: { type: 'string', required: true, description: 'o' },
    kind: { type: 'string', choices: ['bpe', 'char'], default: 'bpe', description: 'k' },
    steps: { type: 'number', default: 200, description: 's' },
    force: { type: 'boolean', description: 'f' },
  } as const;
  const p = parseFlags('x', decls, ['--out', 'o'], 'rft x --out DIR');
  assert.deepEqual(p.flags, { out: 'o', kind: 'bpe', steps: 200, force: false });
  // The types follow the declaration: a required flag is a string, a choice one of its values.
  const out: string = p.flags.out;
  const kind: 'bpe' | 'char' = p.flags.kind;
  const steps: number = p.flags.steps;
  const force: boolean = p.flags.force;
  assert.deepEqual([out, kind, steps, force], ['o', 'bpe', 200, false]);
  // @ts-expect-error a misspelt flag name does not compile
  assert.equal(p.flags.froce, undefined);
  assert.throws(
    () => parseFlags('x', decls, [], 'rft x --out DIR'),
    /rft x: --out is required\nusage: rft x --out DIR/,
  );
  assert.throws(() => parseFlags('x', decls, ['--out=']), /--out needs a value/);
  assert.throws(
    () => parseFlags('x', decls, ['--out', 'o', '--kind', 'wordpiece']),
    /--kind must be bpe or char, got 'wordpiece'/,
  );
});

test('rft run --budget abc and an unknown flag fail before anything runs', () => {
  const a = rft('run', 'configs/main.yaml', '--budget', 'abc', '--check');
  assert.equal(a.status, 2);
  assert.match(a.stderr, /--budget expects a number, got 'abc'/);
  const b = rft('run', 'configs/main.yaml', '--workspce', '/tmp', '--check');
  assert.equal(b.status, 2);
  assert.match(b.stderr, /unknown flag --workspce: did you mean --workspace\?/);
  const c = rft('serve', '--tcp');
  assert.notEqual(c.status, 0, 'serve --tcp does not start stdio');
  assert.match(c.stderr, /unknown flag --tcp/);
});

test('rft status --workspace typo/path creates nothing', () => {
  const base = mkdtempSync(join(tmpdir(), 'rft-flags-'));
  const typo = join(base, 'typo', 'path');
  const r = rft('status', '--workspace', typo);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /--workspace .*typo\/path: no such folder/);
  assert.equal(existsSync(join(base, 'typo')), false);
  const ok = rft('status', '--workspace', base);
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /no runs/);
});

test('buffer, taskset, tokenizer and the process commands check their flags too', () => {
  const a = rft('buffer', 'ls', 'x.db', '--limt', '5');
  assert.notEqual(a.status, 0);
  assert.match(a.stderr, /rft buffer ls: unknown flag --limt: did you mean --limit\?/);
  const b = rft('taskset', 'validate', 'x.jsonl', '--domian', 'math');
  assert.match(b.stderr, /unknown flag --domian: did you mean --domain\?/);
  const c = rft('tokenizer', 'train', 'x.txt', '--out', '/tmp/never', '--vocab-size', '4k');
  assert.match(c.stderr, /--vocab-size expects a number, got '4k'/);
  const d = rft('buffer', 'ls', 'x.db', '--sort', 'rewrd');
  assert.match(d.stderr, /--sort must be seq, createdAt, reward, modelVersion or useCount, got 'rewrd'/);
  // The internal commands used to take any flag: a misspelt one is named now.
  const e = rft('explorer-process', 'RUN', '--run-idd', 'r', '--store', 's');
  assert.equal(e.status, 2);
  assert.match(e.stderr, /rft explorer-process: unknown flag --run-idd: did you mean --run-id\?/);
});

test('rft CMD --help is generated from the declaration: every flag with its value, description and default', () => {
  const r = rft('tokenizer', 'train', '--help');
  assert.equal(r.status, 0, r.stderr);
  assert.match(
    r.stdout,
    /^usage: rft tokenizer train FILE\.\.\. --out DIR \[--kind bpe\|char\] \[--vocab-size N\] \[--min-frequency N\]\n/,
  );
  assert.match(r.stdout, /\n {2}--out DIR +the folder tokenizer\.json is written to \(required\)\n/);
  assert.match(r.stdout, /\n {2}--kind bpe\|char +byte-level BPE or one token per character \(default: bpe\)\n/);
});
