import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { tempDir } from './taskset-helpers.js';

test('run registry: create, status, checkpoints, last step, persisted in .rft/runs.json', async () => {
  const ws = tempDir('rft-runs-');
  try {
    let clock = Date.UTC(2026, 0, 2, 3, 4, 5);
    const reg = await RunRegistry.open(ws, { now: () => clock });
    const a = await reg.create({
      name: 'GSM8K tiny',
      config: { trainer: { lr: 0.001 } },
      configPath: 'gsm8k.rft.yaml',
    });
    assert.equal(a.id, 'gsm8k-tiny-20260102-030405');
    assert.equal(a.status, 'created');
    assert.equal(a.dbPath, join(ws, '.rft', 'runs', a.id, 'buffer.db'));
    const b = await reg.create({ name: 'GSM8K tiny', config: {} });
    assert.equal(b.id, 'gsm8k-tiny-20260102-030405-2', 'same name and second: made unique');
    await assert.rejects(reg.create({ id: a.id, name: 'x', config: {} }), /already exists/);

    clock += 1000;
    await reg.setStatus(a.id, 'running');
    await reg.addCheckpoint(a.id, { version: 2, path: 'ckpt/v2', step: 20 });
    await reg.addCheckpoint(a.id, { version: 1, path: 'ckpt/v1', step: 10 });
    await reg.addCheckpoint(a.id, { version: 2, path: 'ckpt/v2b', step: 21 });
    await reg.setStatus(a.id, 'failed', 'out of memory');
    await assert.rejects(reg.setStatus(a.id, 'exploded' as never), /must be one of/);
    await assert.rejects(reg.setStatus('nope', 'running'), /no run 'nope'/);

    // A second registry (another process) sees everything from the file.
    const again = await RunRegistry.open(ws);
    const got = (await again.get(a.id))!;
    assert.equal(got.status, 'failed');
    assert.equal(got.statusReason, 'out of memory');
    assert.deepEqual(
      got.checkpoints.map((c) => [c.version, c.path, c.step]),
      [
        [1, 'ckpt/v1', 10],
        [2, 'ckpt/v2b', 21],
      ],
    );
    assert.equal(got.lastStep, 21);
    assert.equal(got.updatedAt, clock);
    assert.deepEqual(got.config, { trainer: { lr: 0.001 } });
    assert.equal((await again.latestCheckpoint(a.id))!.path, 'ckpt/v2b');
    const onDisk = JSON.parse(readFileSync(join(ws, '.rft', 'runs.json'), 'utf8'));
    assert.equal(onDisk.runs.length, 2);

    // Changes from the other registry are not lost by this one's next write.
    await again.setLastStep(b.id, 5);
    await reg.setStatus(a.id, 'running');
    assert.equal((await reg.get(b.id))!.lastStep, 5);

    // Concurrent changes in one process are serialised.
    await Promise.all(
      Array.from({ length: 10 }, (_, k) => reg.addCheckpoint(b.id, { version: k, path: `p${k}`, step: k })),
    );
    assert.equal((await again.get(b.id))!.checkpoints.length, 10);

    await reg.remove(b.id);
    assert.deepEqual(
      (await again.list()).map((r) => r.id),
      [a.id],
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('a corrupt runs.json is reported with its path and left as it is', async () => {
  const ws = tempDir('rft-runs-');
  try {
    await RunRegistry.open(ws);
    const file = join(ws, '.rft', 'runs.json');
    writeFileSync(file, '{"version": 1, "runs": [');
    await assert.rejects(RunRegistry.open(ws), (e: Error) =>
      e.message.startsWith(`${file}: cannot read the run registry`),
    );
    writeFileSync(file, '{"version": 1, "runs": {}}');
    await assert.rejects(RunRegistry.open(ws), /field 'runs': expected an array/);
    assert.equal(readFileSync(file, 'utf8'), '{"version": 1, "runs": {}}');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
