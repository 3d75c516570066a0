// configs/examples/own-data/config.yaml end to end: the user's taskset (JSONL, `qid` / `question` /
// `solution`), expert demonstrations (JSONL, `demo`) and eval set (CSV, `q` / `target`), mapped by
// `format`, paths relative to the config file. A shrunken copy (1 SFT step, 2 MIX steps) runs through
// runJob; the buffer holds the file's experts and rollouts of the file's tasks, and the evaluation
// ran on the eval file's tasks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';
import { validateRunConfig } from '../../backend/core/config.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { tempWorkspace } from './tiny-config.js';

const FILE = fileURLToPath(new URL('../../configs/examples/own-data/config.yaml', import.meta.url));
const lines = (f: string) =>
  readFileSync(join(FILE, '..', f), 'utf8')
    .trim()
    .split('\n');

test('own-data example: foreign field names mapped by format, run end to end', async () => {
  const cfg = loadRunConfig(FILE);
  assert.equal(cfg.taskset.path, join(FILE, '..', 'train.jsonl'), 'paths are relative to the config file');
  const [warmup, mix] = cfg.stages!;
  const { config, issues } = validateRunConfig({
    ...cfg,
    placement: 'memory',
    synchronizer: { ...cfg.synchronizer },
    explorer: { ...cfg.explorer, tasks_per_step: 2, repeat_times: 2 },
    // The config's batch of 96 is 64 rollouts + 32 expert rows; shrunken, the MIX batch follows the explore step.
    trainer: { ...cfg.trainer, batch_size: undefined },
    stages: [
      { ...warmup!, steps: 1, batch_size: 8 },
      { ...mix!, steps: 2, wall_seconds: undefined },
    ],
  });
  assert.ok(config, JSON.stringify(issues));
  const ws = tempWorkspace();
  try {
    const s = await runJob({ config, workspace: ws, runId: 'own' });
    for (const k of ['evals', 'base_accuracy', 'final_accuracy', 'wall_seconds', 'report', 'run_dir', 'checkpoint'])
      assert.ok(k in s, `summary key ${k}`);
    assert.equal(s.trainer_steps, 3);
    const store = await openStore(join(s.run_dir, 'buffer.db'));
    try {
      const experts = await store.list({ runId: 'own', source: 'expert', limit: 10_000 });
      assert.equal(experts.length, lines('experts.jsonl').length, 'every demonstration of the experts file');
      const demo = JSON.parse(lines('experts.jsonl')[0]!) as { question: string; demo: string };
      assert.ok(
        experts.some((e) => e.promptText === demo.question && e.responseText === demo.demo),
        'demonstrations carry the mapped prompt and response',
      );
      const usual = await store.list({ runId: 'own', source: 'usual', limit: 10_000 });
      assert.ok(usual.length >= 2 * 2 * 2, `rollouts of 2 MIX steps, got ${usual.length}`);
      const qids = new Set(lines('train.jsonl').map((l) => (JSON.parse(l) as { qid: string }).qid));
      for (const e of usual) assert.ok(qids.has(e.taskId), `task id ${e.taskId} comes from the file's qid`);
    } finally {
      await store.close();
    }
    const evals = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"kind":"eval"'))
      .map((l) => JSON.parse(l) as { n?: number });
    assert.ok(evals.length >= 1);
    assert.equal(evals.at(-1)!.n, lines('eval.csv').length - 1, 'evaluated on every row of eval.csv');
    // `rft eval CHECKPOINT --config FILE` scores the final checkpoint on the config's own eval file
    // (its format mapping and reward): the same accuracy the run measured (greedy, deterministic).
    const ROOT = fileURLToPath(new URL('../..', import.meta.url));
    const r = spawnSync(
      process.execPath,
      [
        '--import',
        pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href,
        join(ROOT, 'backend/cli.ts'),
        'eval',
        s.checkpoint,
        '--config',
        FILE,
      ],
      { cwd: ws, encoding: 'utf8', timeout: 180_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { accuracy: number; n: number; config: string };
    assert.equal(out.n, lines('eval.csv').length - 1);
    assert.equal(out.accuracy, (evals.at(-1) as { accuracy?: number }).accuracy);
    assert.equal(out.config, FILE);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
