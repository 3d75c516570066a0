// A GSM8K-shaped Parquet dataset (written by DuckDB) in the hub cache layout, trained end to end
// in the checkpoint placement (the explorer and trainer processes each load it): the train split's
// rows are explored, the test split is the eval set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { copyParquet, duck, gsm8kSelect } from '../buffer/columnar-fixtures.js';
import { tempWorkspace, tinyConfig } from './tiny-config.js';

test('a hub-layout Parquet dataset trains end to end (checkpoint placement), split train explored, test evaluated', async () => {
  const ws = tempWorkspace();
  try {
    const ds = join(ws, 'hub', 'datasets--openai--gsm8k');
    const snap = join(ds, 'snapshots', 'abc', 'main');
    mkdirSync(snap, { recursive: true });
    await duck(
      copyParquet(gsm8kSelect(0, 12), join(snap, 'train-00000-of-00002.parquet'), 'zstd'),
      copyParquet(gsm8kSelect(12, 24), join(snap, 'train-00001-of-00002.parquet'), 'snappy'),
      copyParquet(gsm8kSelect(100, 104), join(snap, 'test-00000-of-00001.parquet'), 'gzip'),
    );
    writeFileSync(join(ws, 'README.md'), '#\n');
    const format = { prompt_key: 'question', response_key: 'answer' };
    const cfg = tinyConfig({ sync_offset: 0 }, 2, {
      model: { size: 'tiny-0.4m', max_seq_len: 48 },
      taskset: { path: ds, split: 'train', format },
      eval: { path: ds, split: 'test', format },
      experts: undefined,
      workflow: { name: 'single_turn', reward: 'math_answer' },
      stages: undefined,
      algorithm: { name: 'grpo' },
      trainer: { batch_size: 4, steps: 2 },
    });
    const s = await runJob({ config: cfg, workspace: ws, runId: 'hub' });
    assert.equal(s.trainer_steps, 2);
    assert.match(String(s.eval_set), /split test/);
    const store = await openStore(join(s.run_dir, 'buffer.db'));
    try {
      const usual = await store.list({ runId: 'hub', source: 'usual', limit: 1000 });
      assert.ok(usual.length >= 4, `${usual.length} rollouts`);
      // Task ids by shard and row: both shards of the train split, never the test split's rows.
      for (const e of usual) assert.match(e.taskId, /^train-0000[01]-of-00002:L\d+$/);
    } finally {
      await store.close();
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
