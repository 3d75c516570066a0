// The dashboard listed only v0 of a running run until it ended (issue 28): the trainer process
// recorded a published checkpoint in the run registry only every 20th version or at a stage's end,
// while its folders were on disk every step. Now each one is recorded as it is published, and the
// pruned ones leave the registry with their folders: watched here on a real two-process run by
// reading runs.json while it runs, as the server's RunPoller does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { tinyConfig, tempWorkspace } from './tiny-config.js';

test('a running run lists each checkpoint as the trainer publishes it, and only folders that exist', async () => {
  const ws = tempWorkspace();
  const runId = 'ck-live';
  // What a reader of the registry saw while the run was running: checkpoint versions, and any listed folder that was gone.
  const seen = new Set<number>();
  const missing: string[] = [];
  let stop = false;
  const watch = (async () => {
    while (!stop) {
      try {
        const r = JSON.parse(readFileSync(join(ws, '.rft', 'runs.json'), 'utf8')).runs.find(
          (x: { id: string }) => x.id === runId,
        ) as { status: string; checkpoints: { version: number; path: string }[] } | undefined;
        if (r?.status === 'running')
          for (const c of r.checkpoints) {
            seen.add(c.version);
            if (!existsSync(c.path)) missing.push(`v${c.version}`);
          }
      } catch {
        // not written yet
      }
      await new Promise((res) => setTimeout(res, 20));
    }
  })();
  try {
    // Warm-up of 2 steps, then MIX for 8: versions v0..v10, pruned to the newest 3 and the stage starts.
    const s = await runJob({ config: tinyConfig({ sync_offset: 0 }, 8), workspace: ws, runId });
    stop = true;
    await watch;
    assert.equal(s.trainer_steps, 10);
    // Mid-stage versions (neither a stage start v0 / v2 nor the end v10) were listed while running.
    const mid = [...seen].filter((v) => v > 2 && v < 10);
    assert.ok(mid.length >= 3, `versions listed while running: ${[...seen].sort((a, b) => a - b).join(', ')}`);
    assert.deepEqual(missing, [], 'a listed checkpoint whose folder was already pruned');
    // At the end the registry lists exactly the folders on disk.
    const rec = (await (await RunRegistry.open(ws)).get(runId))!;
    const onDisk = readdirSync(join(s.run_dir, 'checkpoints'))
      .map((n) => Number(/^v(\d+)$/.exec(n)?.[1]))
      .filter((v) => Number.isFinite(v))
      .sort((a, b) => a - b);
    assert.deepEqual(
      rec.checkpoints.map((c) => c.version),
      onDisk,
    );
    assert.deepEqual(onDisk, [0, 2, 8, 9, 10]);
    assert.equal(rec.lastStep, 10);
  } finally {
    stop = true;
    await watch;
    rmSync(ws, { recursive: true, force: true });
  }
});
