// `rft taskset validate` end to end through bin/rft.mjs (TypeScript source via tsx).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mixedTaskset, tempDir } from './taskset-helpers.js';
import { copyParquet, duck } from './columnar-fixtures.js';

const rft = (args: string[]) =>
  spawnSync(process.execPath, ['bin/rft.mjs', ...args], {
    encoding: 'utf8',
    env: { ...process.env, RFT_FROM_SOURCE: '1' },
  });

test('rft taskset validate: every bad record as FILE:LINE: field, a summary, non-zero exit; exit 0 when clean', () => {
  const dir = tempDir();
  const bad = join(dir, 'mixed.jsonl');
  const { text, bad: expected } = mixedTaskset(1000, 37);
  writeFileSync(bad, text);
  const clean = join(dir, 'clean.yaml');
  writeFileSync(clean, '- id: a\n  prompt: "1+1?"\n  answer: 2\n');

  const r = rft(['taskset', 'validate', bad]);
  assert.doesNotMatch(r.stderr, /ERR_|Error|^rft:/m, `the CLI itself failed:\n${r.stderr}`);
  assert.equal(r.status, 1, r.stderr);
  const lines = r.stdout.trim().split('\n');
  const errs = lines.filter((l) => /^.*:\d+: field '/.test(l));
  assert.equal(errs.length, 37);
  assert.equal(lines.length, 38, 'the 37 errors and one summary line');
  errs.forEach((l, k) => {
    const m = /^(.*):(\d+): field '([^']+)': (.+)$/.exec(l);
    assert.ok(m, l);
    assert.equal(Number(m[2]), expected[k]!.line);
    assert.equal(m[3], expected[k]!.field);
  });
  assert.equal(lines[lines.length - 1], `${bad}: 1000 valid, 37 errors (1037 records)`);

  const ok = rft(['taskset', 'validate', clean]);
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  assert.equal(ok.stdout.trim(), `${clean}: 1 valid, 0 errors (1 record)`);
});

test('rft taskset validate on Parquet (DuckDB) and a dataset folder with --split: bad rows as FILE:ROW: field', async () => {
  const dir = tempDir();
  mkdirSync(join(dir, 'data'));
  const train = join(dir, 'data', 'train-00000-of-00001.parquet');
  await duck(
    copyParquet(
      `SELECT 'q' || i AS id, CASE WHEN i = 2 THEN '' ELSE 'What is ' || i || '?' END AS prompt, i AS answer FROM range(5) t(i)`,
      train,
      'snappy',
    ),
    copyParquet(
      `SELECT 't' || i AS id, 'What is ' || i || '?' AS prompt, i AS answer FROM range(2) t(i)`,
      join(dir, 'data', 'test-00000-of-00001.parquet'),
      'zstd',
    ),
  );
  const r = rft(['taskset', 'validate', train]);
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stdout, `${train}:3: field 'prompt': prompt is empty\n${train}: 4 valid, 1 error (5 records)\n`);
  const t = rft(['taskset', 'validate', dir, '--split', 'test']);
  assert.equal(t.status, 0, t.stderr);
  assert.equal(t.stdout, `${dir}: 2 valid, 0 errors (2 records)\n`);
  const none = rft(['taskset', 'validate', dir, '--split', 'dev']);
  assert.equal(none.status, 1, none.stdout + none.stderr);
  assert.equal(none.stderr, `rft: ${dir}: no split 'dev'; the dataset has test, train\n`);
});
