// Synchronizer memory in sync mode (lockstep) trains the stage's batch, as the explorer process fills
// it and the distributed trainer tops it up (issue 25): not whatever one explore step made trainable.
// Partial rollouts make that number vary from step to step (groups are released only when whole),
// so before the fix the steps trained 0..N rows against a batch of 4; now every step trains 4.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { STEPS, partialConfig } from './partial-config.js';
import { records } from './consumption-check.js';
import { tempWorkspace } from './tiny-config.js';

test('memory, sync: every step trains the whole batch (tasks_per_step x repeat_times = 4), refilled when a step releases less', async () => {
  const ws = tempWorkspace();
  try {
    const cfg = partialConfig('memory');
    assert.equal(cfg.synchronizer.schedule ?? 'sync', 'sync');
    const s = await runJob({ config: cfg, workspace: ws, runId: 'mb' });
    assert.equal(s.trainer_steps, STEPS);
    const runDir = join(ws, '.rft', 'runs', 'mb');
    const store = await openStore(join(runDir, 'buffer.db'));
    try {
      for (let t = 0; t < STEPS; t++) {
        const usual = (await store.getMany(await store.consumed('trainer', t, 'mb'))).filter(
          (e) => e.source === 'usual',
        );
        assert.equal(usual.length, 4, `step ${t} trained ${usual.length} rows, the batch is 4`);
      }
    } finally {
      await store.close();
    }
    // The refills are rounds of the same explore step: their tokens and rows are summed in its record.
    const explore = records(runDir).filter((r) => r.kind === 'explore');
    assert.ok(explore.every((r) => Number(r.trainable) >= 0));
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
