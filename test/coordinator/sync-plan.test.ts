// The synchronizer's rule for which weights an explore step may use, and the staleness check that
// keeps a config from making the trainer wait forever.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkSyncConfig, requiredVersion } from '../../backend/coordinator/sync-plan.js';
import { tinyConfig } from './tiny-config.js';

test('sync_offset 0 is lock-step, 1 lets the explorer run one version ahead', () => {
  const p0 = { interval: 1, offset: 0, stageStartVersion: 2 };
  const p1 = { ...p0, offset: 1 };
  assert.deepEqual(
    [2, 3, 4, 5].map((t) => requiredVersion(t, p0)),
    [2, 3, 4, 5],
  );
  assert.deepEqual(
    [2, 3, 4, 5].map((t) => requiredVersion(t, p1)),
    [2, 2, 3, 4],
  );
});

test('sync_interval: weights are published every interval steps; never below the stage start', () => {
  const p = { interval: 3, offset: 0, stageStartVersion: 10 };
  assert.deepEqual(
    [10, 11, 12, 13, 14, 15, 16].map((t) => requiredVersion(t, p)),
    [10, 10, 12, 12, 12, 15, 15],
  );
  assert.deepEqual(
    [10, 11, 12, 13, 14].map((t) => requiredVersion(t, { ...p, offset: 2 })),
    [10, 10, 10, 10, 12],
  );
});

test('a staleness bound tighter than offset + interval - 1 is refused with the fix', () => {
  const ok = tinyConfig({ sync_offset: 1, sync_interval: 2 });
  assert.equal(checkSyncConfig(ok), null);
  const bad = { ...ok, buffer: { ...ok.buffer, max_staleness: 1 } };
  assert.match(checkSyncConfig(bad) ?? '', /buffer.max_staleness is 1 .* set buffer.max_staleness >= 2/);
});

test('async: sync_interval more than max_staleness + 1 is refused (the trainer would wait for rows no one can make)', () => {
  const base = tinyConfig({ sync_offset: 0, sync_interval: 1 });
  const asyncCfg = (interval: number, staleness: number) => ({
    ...base,
    synchronizer: { ...base.synchronizer, schedule: 'async' as const, sync_interval: interval },
    buffer: { ...base.buffer, max_staleness: staleness },
  });
  assert.equal(checkSyncConfig(asyncCfg(2, 1)), null);
  assert.equal(checkSyncConfig(asyncCfg(4, 3)), null);
  assert.match(
    checkSyncConfig(asyncCfg(3, 1)) ?? '',
    /buffer.max_staleness is 1 but synchronizer.schedule async with sync_interval 3 .* set buffer.max_staleness >= 2 or sync_interval <= 2/,
  );
});
