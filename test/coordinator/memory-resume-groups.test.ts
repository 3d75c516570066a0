// The memory synchronizer resumes its explore steps where they stopped: a group id
// (run:split:step:task) is never reused, so no group mixes samples of two model versions
// (was: the resumed explorer restarted at step 0 and reused the first run's group ids).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runJob } from '../../backend/coordinator/run.js';
import { tinyConfig, tempWorkspace } from './tiny-config.js';

test('memory synchronizer: explore steps continue after a resume; one model version per explore step', async () => {
  const ws = tempWorkspace();
  try {
    const cfg = tinyConfig({ sync_offset: 0 }, 8);
    cfg.placement = 'memory';
    const ac = new AbortController();
    const runDir = join(ws, '.rft', 'runs', 'g1');
    const watcher = setInterval(() => {
      const f = join(runDir, 'metrics.jsonl');
      if (!existsSync(f)) return;
      const trained = readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"kind":"train"') && l.includes('"stage":"mix"')).length;
      if (trained >= 3) ac.abort();
    }, 20);
    await runJob({ config: cfg, workspace: ws, runId: 'g1', signal: ac.signal, checkpointEvery: 2 }).finally(() =>
      clearInterval(watcher),
    );
    await runJob({ resume: 'g1', workspace: ws, checkpointEvery: 2 });

    const db = new Database(join(runDir, 'buffer.db'), { readonly: true });
    const rows = db
      .prepare("SELECT group_id AS g, model_version AS v FROM experiences WHERE source = 'usual'")
      .all() as { g: string; v: number }[];
    db.close();
    assert.ok(rows.length > 0);
    const versionsByStep = new Map<string, Set<number>>();
    for (const r of rows) {
      const step = r.g.split(':')[2]!;
      versionsByStep.set(step, (versionsByStep.get(step) ?? new Set()).add(r.v));
    }
    for (const [step, vs] of versionsByStep)
      assert.equal(vs.size, 1, `explore step ${step} holds samples of model versions ${[...vs].join(', ')}`);
    const steps = [...versionsByStep.keys()].map(Number).sort((a, b) => a - b);
    assert.deepEqual(
      steps,
      steps.map((_, i) => steps[0]! + i),
      'explore steps are numbered without gaps or repeats',
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
