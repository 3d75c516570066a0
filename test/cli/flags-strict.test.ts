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
import { flagNumber, parseArgs } from '../../backend/cli/command.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const rft = (...args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'backend/cli.ts'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });
const strict = (argv: string[]) => parseArgs(argv, ['quiet'], { valueFlags: ['workspace', 'budget'], command: 'run' });

test('strict parsing: unknown flags, a value flag without value, a boolean with a value', () => {
  assert.throws(
    () => strict(['c.yaml', '--workspce', 'x']),
    /rft run: unknown flag --workspce: did you mean --workspace\?/,
  );
  assert.throws(() => strict(['--tcp']), /unknown flag --tcp \(flags: --workspace --budget --quiet\)/);
  assert.throws(() => strict(['--workspace']), /--workspace needs a value/);
  assert.throws(() => strict(['--workspace', '--quiet']), /--workspace needs a value/);
  assert.throws(() => strict(['--quiet=yes']), /--quiet takes no value/);
  assert.deepEqual(strict(['c.yaml', '--workspace=w', '--quiet']).flags, { workspace: 'w', quiet: true });
});

test('numbers are parsed strictly', () => {
  const n = (v: string) => flagNumber(parseArgs(['--budget', v]), 'budget', 0);
  assert.equal(n('12'), 12);
  assert.equal(n('0.5'), 0.5);
  assert.equal(n('1e-3'), 0.001);
  assert.equal(n('-3'), -3);
  for (const bad of ['abc', '12abc', '0x10', 'Infinity', 'NaN', '', ' ', '1,5'])
    assert.throws(() => n(bad), /--budget expects a number/, bad);
  assert.throws(() => flagNumber(parseArgs(['--budget']), 'budget', 0), /--budget expects a number, got no value/);
});

test('rft run --budget abc and an unknown flag fail before anything runs', () => {
  const a = rft('run', 'configs/main.yaml', '--budget', 'abc', '--check');
  assert.notEqual(a.status, 0);
  assert.match(a.stderr, /--budget expects a number, got 'abc'/);
  const b = rft('run', 'configs/main.yaml', '--workspce', '/tmp', '--check');
  assert.notEqual(b.status, 0);
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

test('buffer, taskset and tokenizer commands check their flags too', () => {
  const a = rft('buffer', 'ls', 'x.db', '--limt', '5');
  assert.notEqual(a.status, 0);
  assert.match(a.stderr, /rft buffer ls: unknown flag --limt: did you mean --limit\?/);
  const b = rft('taskset', 'validate', 'x.jsonl', '--domian', 'math');
  assert.match(b.stderr, /unknown flag --domian: did you mean --domain\?/);
  const c = rft('tokenizer', 'train', 'x.txt', '--out', '/tmp/never', '--vocab-size', '4k');
  assert.match(c.stderr, /--vocab-size expects a number, got '4k'/);
});
