// explorer.workers > 1 in a run: rollout on worker threads, in both process models. Every usual
// experience the trainer consumed was made by the weights of the step it feeds (sync_offset 0), so
// the workers really received each new version.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { tinyConfig, tempWorkspace } from './tiny-config.js';
import { runEngines } from '../../backend/coordinator/monitor.js';
import { engineInfo, engineLabel } from '../../backend/model/engine.js';

for (const method of ['memory', 'checkpoint'] as const) {
  test(`run with 2 rollout workers (synchronizer ${method}): experiences stamped with each step's weights`, async () => {
    const ws = tempWorkspace();
    try {
      const cfg = tinyConfig({ sync_offset: 0 }, 4);
      cfg.placement = method;
      cfg.explorer.workers = 2;
      const s = await runJob({ config: cfg, workspace: ws, runId: `w-${method}` });
      assert.equal(s.trainer_steps, 2 + 4);
      const store = await openStore(join(s.run_dir, 'buffer.db'));
      try {
        for (let t = 2; t < s.trainer_steps; t++) {
          const usual = (await store.getMany(await store.consumed('trainer', t, `w-${method}`))).filter(
            (e) => e.source === 'usual',
          );
          assert.ok(usual.length > 0, `step ${t} trained on rollouts`);
          for (const e of usual) {
            assert.equal(e.modelVersion, t, `step ${t}: experience ${e.id} from v${e.modelVersion}`);
            assert.equal(e.logprobs.length, e.responseTokens.length);
          }
        }
      } finally {
        await store.close();
      }
      const recs = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { t: number; kind: string } & Record<string, unknown>);
      const explore = recs.filter((m) => m.kind === 'explore');
      const last = explore.at(-1)?.rollout as { workers: number; samples: number } | undefined;
      assert.equal(last?.workers, 2, 'the explore metrics carry the rollout workers');
      assert.ok(last.samples >= 4 * 4);
      // What the dashboard shows: every process of the run (the trainer and explorer processes of
      // the checkpoint synchronizer too) recorded the tensor engine this process started.
      assert.deepEqual(runEngines(recs), {
        tensor: engineLabel(engineInfo()!),
        rollout: 'native (2 worker threads)',
      });
      const named = new Set(recs.filter((r) => r.kind === 'engine').map((r) => r.component));
      assert.deepEqual([...named].sort(), method === 'checkpoint' ? ['explorer', 'run', 'trainer'] : ['run']);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
}
