// trainer-starved.ts: the checkpoint async explorer goes past its lead bound only while the trainer
// has been waiting for a batch for a while without taking one; a trainer whose state line still says
// waiting after it took its rows (the line is written after the take) is not starved.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../backend/buffer/storage/index.js';
import { STARVED_AFTER_MS, trainerStarved } from '../../backend/coordinator/trainer-starved.js';
import { makeExp } from '../buffer/storage-helpers.js';

test('trainerStarved: a trainer waiting long for its step with nothing usual taken for it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-starved-'));
  const db = await openStore(join(dir, 'buffer.db'));
  const run = 'r';
  const t0 = 1_800_000_000_000;
  const later = t0 + STARVED_AFTER_MS;
  try {
    // No state line yet (trainer starting), or training: never starved.
    assert.equal(await trainerStarved(db, run, 5, later), false);
    await db.setState(run, 'state:trainer', { state: 'training', detail: 'step 5', at: t0 });
    assert.equal(await trainerStarved(db, run, 5, later), false);
    // Waiting for step 5 with nothing taken: starved once it has waited STARVED_AFTER_MS, not before.
    await db.setState(run, 'state:trainer', { state: 'waiting', detail: 'batch for step 5', at: t0 });
    assert.equal(await trainerStarved(db, run, 5, t0 + 10), false);
    assert.equal(await trainerStarved(db, run, 5, later), true);
    // Rows in the buffer do not change that (reads take whole batches; these may not make one).
    await db.appendExperiences([makeExp('a', { runId: run, modelVersion: 4 })]);
    assert.equal(await trainerStarved(db, run, 5, later), true);
    // Only the expert part of a MIX batch taken for the step: still starved for usual rows.
    await db.appendExperiences([makeExp('ex', { runId: run, source: 'expert', modelVersion: -1 })]);
    await db.takeFifo({ n: 1, source: 'expert', runId: run, consumer: 'trainer', step: 5, part: 'expert' });
    assert.equal(await trainerStarved(db, run, 5, later), true);
    // It takes its usual rows for step 5; the state line still says waiting: training, not starved.
    const took = await db.takeFifo({
      n: 1,
      source: 'usual',
      minVersion: 4,
      runId: run,
      consumer: 'trainer',
      step: 5,
      part: 'main',
    });
    assert.deepEqual(
      took.experiences.map((e) => e.id),
      ['a'],
    );
    assert.equal(await trainerStarved(db, run, 5, later), false);
    // sync_interval > 1: the line names step 7 while v5 is the newest published; step 7 took nothing.
    await db.setState(run, 'state:trainer', { state: 'waiting', detail: 'batch for step 7', at: t0 });
    assert.equal(await trainerStarved(db, run, 5, later), true);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
