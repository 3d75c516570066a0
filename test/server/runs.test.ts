// Runs through `rft serve`: the workspace's lowdb registry (list, status with config and
// checkpoints), opening a run's buffer by run id; no `.rft/` is created where there is none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { makeBuffer } from '../../tools/make-buffer.js';
import { spawnServe } from '../../tools/spawn-serve.js';

test('runs/list and runs/status come from .rft/runs.json; buffer/open by run id', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-runs-'));
  const reg = await RunRegistry.open(ws);
  const run = await reg.create({
    name: 'mix demo',
    config: { algorithm: 'mix', trainer: { steps: 40 } },
    configPath: join(ws, 'train.rft.yaml'),
  });
  await makeBuffer(12, run.dir);
  await reg.setStatus(run.id, 'paused');
  await reg.addCheckpoint(run.id, { version: 3, path: join(run.dir, 'checkpoints', 'v3'), step: 30 });
  const s = spawnServe(['--workspace', ws]);
  try {
    const list = await s.request('runs/list', {});
    assert.equal(list.length, 1);
    assert.equal(list[0]!.id, run.id);
    assert.equal(list[0]!.status, 'paused');
    assert.equal(list[0]!.step, 30);
    const st = await s.request('runs/status', { runId: run.id });
    assert.deepEqual(st.config, { algorithm: 'mix', trainer: { steps: 40 } });
    assert.deepEqual(st.checkpoints, [{ version: 3, path: join(run.dir, 'checkpoints', 'v3'), step: 30 }]);
    await assert.rejects(s.request('runs/status', { runId: 'nope' }), { code: -32004 });
    const o = await s.request('buffer/open', { runId: run.id });
    assert.equal(o.path, run.dbPath);
    assert.equal(o.counts.usual, 12);
    await assert.rejects(s.request('buffer/open', { runId: 'nope' }), /no run 'nope'/);
  } finally {
    await s.close();
  }
});

test('a workspace without runs lists none and is left untouched', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-noruns-'));
  const s = spawnServe(['--workspace', ws]);
  try {
    assert.deepEqual(await s.request('runs/list', {}), []);
    assert.equal(existsSync(join(ws, '.rft')), false);
  } finally {
    await s.close();
  }
});
