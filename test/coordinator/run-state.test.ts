// The run's resume state (coordinator/run-state.ts) through a real buffer: the start evaluation, the
// base accuracy and the stage starts, the same keys for every placement, read back after the store is
// closed and opened again (what a resume does); the keys distributed runs wrote before are read.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../backend/buffer/storage/index.js';
import { RunState } from '../../backend/coordinator/run-state.js';
import type { EvalResult } from '../../backend/coordinator/evaluate.js';

const root = mkdtempSync(join(tmpdir(), 'rft-run-state-'));
after(() => rmSync(root, { recursive: true, force: true }));
const url = `sqlite:${join(root, 'buffer.db')}`;
const result = { accuracy: 0.25, mean_reward: 0.5 } as EvalResult;

test('the state a resume reads: kept in the buffer, per run, the first stage start standing', async () => {
  const store = await openStore(url);
  const s = new RunState(store, 'r1');
  assert.equal(await s.startEvaluated(), false);
  assert.equal(await s.base(), undefined);
  assert.equal(await s.stageStart(0), undefined);
  await s.recordStart(result);
  await s.setBase(0.25);
  await s.markStageStart(0, { version: 0, path: '/ck/v0' });
  await s.markStageStart(0, { version: 7, path: '/ck/v7' });
  await s.markStageStart(1, { version: 12 });
  await store.close();

  const again = await openStore(url);
  const r = new RunState(again, 'r1');
  assert.equal(await r.startEvaluated(), true);
  assert.deepEqual(await r.start(), result);
  assert.equal(await r.base(), 0.25);
  assert.deepEqual(await r.stageStart(0), { version: 0, path: '/ck/v0' }, 'a resumed stage keeps its first start');
  assert.deepEqual(await r.stageStart(1), { version: 12 });
  // Another run of the same buffer has its own.
  assert.equal(await new RunState(again, 'r2').startEvaluated(), false);
  // What a distributed run wrote before the state was one, and an older local run's accuracy alone.
  await again.setState('old-dist', 'dist:eval_start', result);
  await again.setState('old-dist', 'dist:base_accuracy', 0.5);
  const old = new RunState(again, 'old-dist');
  assert.deepEqual([await old.startEvaluated(), await old.start(), await old.base()], [true, result, 0.5]);
  await again.setState('old-local', 'eval_start', 'no result');
  const local = new RunState(again, 'old-local');
  assert.deepEqual([await local.startEvaluated(), await local.start()], [true, undefined]);
  // An in-process run from before kept these in its checkpoint: read when the buffer has none.
  const ck = new RunState(again, 'old-ck', { startEvaluated: true, base: 0.75 });
  assert.deepEqual([await ck.startEvaluated(), await ck.base()], [true, 0.75]);
  await ck.setBase(0.5);
  assert.equal(await ck.base(), 0.5, 'the buffer wins once written');
  await again.close();
});

test('a run without a buffer (mode bench) keeps the state in memory', async () => {
  const m = RunState.inMemory('b');
  assert.equal(await m.base(), undefined);
  await m.setBase(0.5);
  await m.recordStart(result);
  assert.deepEqual([await m.base(), await m.startEvaluated()], [0.5, true]);
  assert.equal(await RunState.inMemory('b').startEvaluated(), false, 'each its own');
});
