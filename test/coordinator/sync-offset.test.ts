// The default process model: explorer and trainer as separate processes sharing the SQLite buffer,
// weights as versioned checkpoints. The consumption records prove the sync_offset bound: trainer
// step t only ever trains on experiences made by weights v(t - sync_offset) or newer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { tinyConfig, tempWorkspace } from './tiny-config.js';

async function usualVersionsByStep(dbPath: string, steps: number, runId: string) {
  const store = await openStore(dbPath);
  try {
    const out: { step: number; versions: number[]; expert: number }[] = [];
    for (let t = 0; t < steps; t++) {
      const exps = await store.getMany(await store.consumed('trainer', t, runId));
      out.push({
        step: t,
        versions: exps.filter((e) => e.source === 'usual').map((e) => e.modelVersion),
        expert: exps.filter((e) => e.source === 'expert').length,
      });
    }
    return out;
  } finally {
    await store.close();
  }
}

for (const offset of [0, 1]) {
  test(`two-process run with sync_offset ${offset} completes and respects the offset`, async () => {
    const ws = tempWorkspace();
    try {
      const s = await runJob({ config: tinyConfig({ sync_offset: offset }), workspace: ws, runId: `off${offset}` });
      assert.equal(s.trainer_steps, 2 + 6);
      assert.ok(existsSync(s.report));
      assert.ok(s.final_accuracy !== null && s.final_accuracy >= 0 && s.final_accuracy <= 1);
      const steps = await usualVersionsByStep(join(s.run_dir, 'buffer.db'), s.trainer_steps, `off${offset}`);
      // Warm-up (SFT, trainer only): expert rows only.
      for (const r of steps.slice(0, 2)) assert.deepEqual(r.versions, [], `step ${r.step}`);
      for (const r of steps.slice(2)) {
        assert.equal(r.versions.length, 4, `step ${r.step}: one explore step's experiences`);
        assert.equal(r.expert, 4);
        for (const v of r.versions) {
          assert.ok(v <= r.step, `step ${r.step}: experience from the future v${v}`);
          assert.ok(v >= r.step - offset, `step ${r.step}: v${v} is more than ${offset} versions behind`);
        }
      }
      if (offset === 0)
        assert.deepEqual(
          steps.slice(2).map((r) => r.versions[0]),
          [2, 3, 4, 5, 6, 7],
        );
      // Every component wrote its state and idle fraction.
      const metrics = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const states = metrics.filter((m) => m.kind === 'state');
      assert.ok(states.some((m) => m.component === 'trainer' && typeof m.trainer_idle === 'number'));
      assert.ok(states.some((m) => m.component === 'explorer' && typeof m.explorer_idle === 'number'));
      const ahead = metrics.filter((m) => m.kind === 'explore').map((m) => m.ahead as number);
      assert.ok(ahead.length >= 6 && ahead.every((a) => a <= offset), `explorer ahead by ${ahead}`);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
}
