// Issue 24 (low): `rft coordinator` run again on an existing run with a different config printed
// `"created": false` and exit 0, without saying that the config given was not the run's (the run
// goes on with its stored one). Now it names the fields that differ and exits 1; the same config
// again is the quiet no-op it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import { tinyConfig, writeConfig } from './tiny-config.js';
import { configDiff } from '../../backend/coordinator/distributed/config-diff.js';

const root = join(import.meta.dirname, '..', '..');
const rft = (args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', join(root, 'backend/cli.ts'), ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 180_000,
    env: { ...process.env, RFT_LOG_LEVEL: 'warn' },
  });

test('configDiff names the dotted paths that differ', () => {
  assert.deepEqual(
    configDiff(
      { a: 1, s: [{ steps: 2 }, { steps: 6 }], t: { lr: 1 } },
      { a: 1, s: [{ steps: 2 }, { steps: 9 }], t: { lr: 1, x: true } },
    ),
    ['s[1].steps', 't.x'],
  );
  assert.deepEqual(configDiff({ s: [1] }, { s: [1, 2] }), ['s (1 vs 2 items)']);
  assert.deepEqual(configDiff({ a: { b: [1] } }, { a: { b: [1] } }), []);
});

test('rft coordinator on an existing run: the same config is a no-op (exit 0); another config is named field by field (exit 1), nothing changed', async (t) => {
  const server = startPg();
  if ('skip' in server) return t.skip(server.skip);
  const dir = mkdtempSync(join(tmpdir(), 'rft-coord-rerun-'));
  try {
    const url = pgSchemaUrl(server.url);
    const same = writeConfig(dir, tinyConfig({ sync_offset: 0 }, 4));
    const first = rft(['coordinator', same, '--buffer', url, '--run', 'cr', '--weights', join(dir, 'w')]);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /"created":true/);
    const again = rft(['coordinator', same, '--buffer', url, '--run', 'cr', '--weights', join(dir, 'w')]);
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stdout, /"created":false/);
    assert.doesNotMatch(again.stdout + again.stderr, /differs/);

    const otherDir = mkdtempSync(join(dir, 'other-'));
    const other = writeConfig(otherDir, tinyConfig({ sync_offset: 0 }, 9, { seed: 7 }));
    const r = rft(['coordinator', other, '--buffer', url, '--run', 'cr', '--weights', join(dir, 'w')]);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /"created":false/);
    assert.match(
      r.stderr,
      new RegExp(
        `run cr already exists in this database with another config: ${other.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} differs in seed, stages\\[1\\]\\.steps\\. Nothing was changed: the run keeps the config it was created with\\. To train with this one, give it a new --run id\\.`,
      ),
    );
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
