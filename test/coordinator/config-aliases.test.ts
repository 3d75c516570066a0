// Renamed config keys (core/config-aliases.ts): `synchronizer.method` is now `placement`. The old
// spelling loads under the new key with a warning at the old key (rft run's log, a Warning in the
// editor's Problems that does not refuse the file); both spellings at once is an error; rules about
// the new key are reported where the file wrote it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validateRunConfig } from '../../backend/core/config.js';
import { configIssuesAt } from '../../backend/core/config-lines.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BASE = { taskset: { builtin: 'reverse' }, workflow: { name: 'single_turn', reward: 'exact_match' } };

test('the old spelling loads as placement, with a warning naming both', () => {
  const raw = { ...BASE, synchronizer: { method: 'memory', sync_offset: 1 } };
  const v = validateRunConfig(raw);
  assert.deepEqual(v.issues, []);
  assert.equal(v.config!.placement, 'memory');
  assert.equal(v.config!.synchronizer.sync_offset, 1);
  assert.deepEqual(
    v.warnings.map((w) => w.path),
    ['synchronizer.method'],
  );
  assert.match(v.warnings[0]!.message, /renamed 'placement'.*write 'placement: memory'/);
  // The caller's object is not changed.
  assert.equal((raw.synchronizer as Record<string, unknown>).method, 'memory');
  // The new spelling: no warning.
  const now = validateRunConfig({ ...BASE, placement: 'memory' });
  assert.equal(now.config!.placement, 'memory');
  assert.deepEqual(now.warnings, []);
  // Neither: the default placement.
  assert.equal(validateRunConfig(BASE).config!.placement, 'checkpoint');
});

test('both spellings at once is an error at the old key', () => {
  const v = validateRunConfig({ ...BASE, placement: 'checkpoint', synchronizer: { method: 'memory' } });
  assert.equal(v.config, undefined);
  assert.deepEqual(
    v.issues.map((i) => i.path),
    ['synchronizer.method'],
  );
  assert.match(v.issues[0]!.message, /'placement', which is given too/);
});

test('schema and unread-field rules about placement are reported at the key the file wrote', () => {
  // placement memory hands weights over every step: sync_interval is refused (a rule across keys).
  const interval = validateRunConfig({ ...BASE, synchronizer: { method: 'memory', sync_interval: 2 } });
  assert.deepEqual(
    interval.issues.map((i) => i.path),
    ['synchronizer.sync_interval'],
  );
  const bench = validateRunConfig({
    ...BASE,
    mode: 'bench',
    eval: { builtin: 'reverse' },
    synchronizer: { method: 'memory' },
  });
  assert.ok(
    bench.issues.some((i) => i.path === 'synchronizer.method'),
    JSON.stringify(bench.issues),
  );
  const benchNow = validateRunConfig({ ...BASE, mode: 'bench', eval: { builtin: 'reverse' }, placement: 'memory' });
  assert.ok(
    benchNow.issues.some((i) => i.path === 'placement'),
    JSON.stringify(benchNow.issues),
  );
});

test('in the editor: a Warning at the line of the old key, errors beside it still at their lines', () => {
  const text = [
    'taskset: { builtin: reverse }',
    'workflow: { name: single_turn, reward: exact_match }',
    'synchronizer:',
    '  method: memory',
    '  sync_offset: 1',
    '',
  ].join('\n');
  assert.deepEqual(configIssuesAt(text), [
    {
      line: 4,
      field: 'synchronizer.method',
      message: configIssuesAt(text)[0]!.message,
      severity: 'warning',
    },
  ]);
  const withError = `${text}trainer: { lr: -1 }\n`;
  const issues = configIssuesAt(withError);
  assert.deepEqual(
    issues.map((i) => [i.field, i.line, i.severity ?? 'error']),
    [
      ['synchronizer.method', 4, 'warning'],
      ['trainer.lr', 6, 'error'],
    ],
  );
  const restart = configIssuesAt(`${text}restart: 2\n`);
  assert.deepEqual(
    restart.map((i) => [i.field, i.line, i.severity ?? 'error']),
    [
      ['synchronizer.method', 4, 'warning'],
      ['restart', 6, 'error'],
    ],
  );
});

test('rft run --check: the old spelling passes and the log names the new key', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-alias-'));
  try {
    const file = join(dir, 'old.rft.yaml');
    writeFileSync(
      file,
      'taskset: { builtin: reverse }\nworkflow: { name: single_turn, reward: exact_match }\nalgorithm: { name: grpo }\nsynchronizer:\n  method: memory\n',
    );
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'backend/cli.ts'), 'run', file, '--check', '--workspace', dir],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /WARN config: .*old\.rft\.yaml: field 'synchronizer\.method': renamed 'placement'/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
