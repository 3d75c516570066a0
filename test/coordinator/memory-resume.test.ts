// The colocated process model (synchronizer `memory`): a run stopped in the middle (SIGTERM ends in
// the same abort) resumes from its last checkpoint and buffer position, and completes with every
// step trained once and no usual experience trained twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { tinyConfig, tempWorkspace } from './tiny-config.js';

const MIX_STEPS = 8;
const TOTAL = 2 + MIX_STEPS;

test('memory synchronizer: stop mid-run, resume, complete; nothing trained twice', async () => {
  const ws = tempWorkspace();
  try {
    const cfg = tinyConfig({ sync_offset: 0 }, MIX_STEPS);
    cfg.placement = 'memory';
    const ac = new AbortController();
    const runDir = join(ws, '.rft', 'runs', 'm1');
    const watcher = setInterval(() => {
      const f = join(runDir, 'metrics.jsonl');
      if (!existsSync(f)) return;
      const trained = readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"kind":"train"') && l.includes('"stage":"mix"')).length;
      if (trained >= 4) ac.abort();
    }, 20);
    // Checkpoint every 2 steps, so the stop falls between resume points.
    const first = await runJob({
      config: cfg,
      workspace: ws,
      runId: 'm1',
      signal: ac.signal,
      checkpointEvery: 2,
    }).finally(() => clearInterval(watcher));
    assert.ok(first.trainer_steps < TOTAL, `stopped early (${first.trainer_steps} steps)`);
    const reg = await RunRegistry.open(ws);
    assert.equal((await reg.get('m1'))?.status, 'stopped');

    const done = await runJob({ resume: 'm1', workspace: ws, checkpointEvery: 2 });
    assert.equal(done.trainer_steps, TOTAL);
    assert.equal((await reg.get('m1'))?.status, 'completed');

    const store = await openStore(join(runDir, 'buffer.db'));
    try {
      const seen = new Set<string>();
      for (let t = 0; t < TOTAL; t++) {
        const exps = await store.getMany(await store.consumed('trainer', t, 'm1'));
        assert.ok(exps.length > 0, `step ${t} recorded its batch`);
        for (const e of exps.filter((x) => x.source === 'usual')) {
          assert.ok(!seen.has(e.id), `${e.id} trained twice`);
          seen.add(e.id);
        }
      }
      assert.equal(await store.lastConsumedStep('trainer', 'm1'), TOTAL - 1);
    } finally {
      await store.close();
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
