// Partial rollouts survive a killed explorer (synchronizer checkpoint, restart: 1): the explorer
// process is killed with SIGKILL while trajectories are unfinished in the buffer; the restarted
// explorer continues each from its stored prefix (same id, the stored tokens, log-probs and
// segments kept as they were, new segments after them), none is restarted from scratch or lost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import type { Experience } from '../../backend/core/types.js';
import { isUnfinished } from '../../backend/explorer/partial.js';
import { tempWorkspace } from './tiny-config.js';
import { partialConfig } from './partial-config.js';

function records(runDir: string): Record<string, unknown>[] {
  const f = join(runDir, 'metrics.jsonl');
  if (!existsSync(f)) return [];
  return readFileSync(f, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return []; // a line being written
      }
    });
}

test('kill -9 of the explorer mid-trajectory: the restarted explorer continues the stored prefixes', async () => {
  const ws = tempWorkspace();
  try {
    const cfg = partialConfig('checkpoint', {
      restart: 1,
      stages: [{ name: 'grpo', algorithm: { name: 'grpo' }, steps: 10 }],
    });
    const runDir = join(ws, '.rft', 'runs', 'pk');
    let snapshot: Experience[] | undefined;
    let stop = false;
    // Watch the buffer: once the explorer has stored unfinished trajectories continued at least once, kill it.
    const watch = (async () => {
      while (!stop && !snapshot) {
        await new Promise((r) => setTimeout(r, 150));
        const m = records(runDir);
        const pid = m.filter((r) => r.kind === 'process' && r.component === 'explorer' && r.event === 'started').at(-1)
          ?.pid as number | undefined;
        if (!pid || !existsSync(join(runDir, 'buffer.db'))) continue;
        const store = await openStore(join(runDir, 'buffer.db'));
        try {
          const rows = (await store.list({ runId: 'pk', status: 'partial', limit: 1000 })).filter(isUnfinished);
          if (rows.some((e) => (e.segments?.length ?? 0) >= 2)) {
            process.kill(pid, 'SIGKILL');
            snapshot = rows;
          }
        } finally {
          await store.close();
        }
      }
    })();
    const s = await runJob({ config: cfg, workspace: ws, runId: 'pk' }).finally(() => (stop = true));
    await watch;
    assert.ok(snapshot?.length, 'the explorer was killed while trajectories were unfinished');
    assert.equal(s.trainer_steps, 10);
    const ev = records(runDir)
      .filter((r) => r.kind === 'process' && r.component === 'explorer')
      .map((r) => r.event);
    assert.ok(ev.includes('died') && ev.includes('restarted'), ev.join(','));

    const store = await openStore(join(runDir, 'buffer.db'));
    try {
      let continued = 0;
      for (const before of snapshot) {
        const after = await store.get(before.id);
        assert.ok(after, `${before.id}: lost after the kill`);
        // The stored prefix is kept exactly (the explorer may have stored a longer one just before it died).
        assert.deepEqual(
          after.responseTokens.slice(0, before.responseTokens.length),
          before.responseTokens,
          `${before.id}: tokens restarted`,
        );
        assert.deepEqual(after.logprobs.slice(0, before.logprobs.length), before.logprobs);
        assert.deepEqual(after.segments!.slice(0, before.segments!.length), before.segments);
        if (after.segments!.length > before.segments!.length) continued++;
        if (after.status !== 'partial') assert.equal(after.metadata?.partial, undefined);
      }
      assert.ok(continued > 0, 'trajectories were continued after the restart');
      // Continued after the kill, and trained on: a snapshotted trajectory is in a recorded batch.
      const trained = new Set<string>();
      for (let t = 0; t < 10; t++) for (const id of await store.consumed('trainer', t, 'pk')) trained.add(id);
      assert.ok(
        snapshot.some((e) => trained.has(e.id)),
        'a trajectory cut before the kill was finished and trained on',
      );
    } finally {
      await store.close();
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
