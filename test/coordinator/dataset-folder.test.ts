// A dataset folder as a run's taskset / eval / experts path: the hub cache's layout
// (datasets--ORG--NAME, refs/main, config subfolders) and plain folders of split shards, `split`
// choosing the files. Parquet written by DuckDB.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { loadTasks, TaskFeed } from '../../backend/coordinator/setup/tasks.js';
import { watchRunFiles } from '../../backend/coordinator/live.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { datasetFolder, splitOfFile } from '../../backend/core/taskset-columnar/index.js';
import { copyParquet, duck, gsm8kSelect } from '../buffer/columnar-fixtures.js';

const GSM = { prompt_key: 'question', response_key: 'answer' };

function cfgOf(raw: Record<string, unknown>): RunConfig {
  const { config, issues } = validateRunConfig({ workflow: { name: 'single_turn', reward: 'math_answer' }, ...raw });
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}

/** datasets--openai--gsm8k as the hub cache holds it: main/ (train in two shards, test) and socratic/ (train). */
async function hubGsm8k(root: string): Promise<string> {
  const ds = join(root, 'datasets--openai--gsm8k');
  const snap = join(ds, 'snapshots', 'e53f048856ff4f594e959d75785d2c2d37b678ee');
  mkdirSync(join(snap, 'main'), { recursive: true });
  mkdirSync(join(snap, 'socratic'), { recursive: true });
  // An older snapshot beside it: refs/main says which one is current.
  mkdirSync(join(ds, 'snapshots', '0000000000000000000000000000000000000000', 'main'), { recursive: true });
  mkdirSync(join(ds, 'refs'));
  writeFileSync(join(ds, 'refs', 'main'), 'e53f048856ff4f594e959d75785d2c2d37b678ee');
  writeFileSync(join(snap, 'README.md'), '# gsm8k\n');
  await duck(
    copyParquet(gsm8kSelect(0, 30), join(snap, 'main', 'train-00000-of-00002.parquet'), 'zstd'),
    copyParquet(gsm8kSelect(30, 50), join(snap, 'main', 'train-00001-of-00002.parquet'), 'snappy'),
    copyParquet(gsm8kSelect(1000, 1010), join(snap, 'main', 'test-00000-of-00001.parquet'), 'gzip'),
    copyParquet(gsm8kSelect(2000, 2005), join(snap, 'socratic', 'train-00000-of-00001.parquet'), 'zstd'),
  );
  return ds;
}

test('a hub cache entry as taskset and eval path: refs/main, split chooses the shards, CONFIG/SPLIT where configs share a split', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-hub-'));
  try {
    const ds = await hubGsm8k(dir);
    const folder = datasetFolder(ds);
    assert.deepEqual([...folder.splits.keys()].sort(), ['main/test', 'main/train', 'socratic/train']);
    const pools = await loadTasks(
      cfgOf({
        taskset: { path: ds, split: 'main/train', format: GSM },
        eval: { path: ds, split: 'test', format: GSM },
      }),
    );
    // Both shards of main/train in order, the test split as the eval set (none held out of train).
    assert.equal(pools.train.length, 50);
    assert.deepEqual(
      pools.train.map((t) => t.answer),
      Array.from({ length: 50 }, (_, i) => String(i + 1)),
    );
    // Each shard numbers its rows from 1: ids by row carry the shard's name.
    assert.deepEqual([pools.train[0]!.id, pools.train[30]!.id], ['train-00000-of-00002:L1', 'train-00001-of-00002:L1']);
    assert.equal(pools.eval.length, 10);
    assert.equal(pools.eval[0]!.prompt, 'What is 1000 plus 1?');
    assert.match(pools.evalSet, /split test/);
    // `train` alone is in two configs: refused with the names to choose from.
    await assert.rejects(
      () => loadTasks(cfgOf({ taskset: { path: ds, split: 'train', format: GSM }, eval: { path: ds, format: GSM } })),
      /split 'train' is in several configs \(main\/train, socratic\/train\): give split as CONFIG\/train/,
    );
    await assert.rejects(
      () => loadTasks(cfgOf({ taskset: { path: ds, split: 'validation', format: GSM } })),
      /field 'taskset\.split': .*no split 'validation'; the dataset has main\/test, main\/train, socratic\/train/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a plain folder of split shards (data/SPLIT-NNNNN-of-NNNNN.parquet): train by default, any split by name', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-shards-'));
  try {
    mkdirSync(join(dir, 'data'));
    await duck(
      copyParquet(gsm8kSelect(0, 25), join(dir, 'data', 'train-00000-of-00001.parquet'), 'zstd'),
      copyParquet(gsm8kSelect(100, 104), join(dir, 'data', 'validation-00000-of-00001.parquet'), 'snappy'),
    );
    // No split: the taskset reads train and, with no eval, holds 10% of it out.
    const p = await loadTasks(cfgOf({ taskset: { path: dir, format: GSM } }));
    assert.equal(p.train.length + p.eval.length, 25);
    // eval without split: test, else validation.
    const q = await loadTasks(cfgOf({ taskset: { path: dir, format: GSM }, eval: { path: dir, format: GSM } }));
    assert.deepEqual(
      q.eval.map((t) => t.answer),
      ['101', '102', '103', '104'],
    );
    const v = await loadTasks(
      cfgOf({ taskset: { path: dir, split: 'validation', format: GSM }, eval: { holdout: 0.25 } }),
    );
    assert.equal(v.train.length + v.eval.length, 4);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('split names from shard file names: hub shards, hashed shards, the datasets cache, numbered files in a split folder', () => {
  assert.equal(splitOfFile('main/train-00000-of-00002.parquet'), 'train');
  assert.equal(splitOfFile('data/test-00000-of-00001-5f3a9c.parquet'), 'test');
  assert.equal(splitOfFile('gsm8k-validation-00001-of-00003.arrow'), 'validation');
  assert.equal(splitOfFile('gsm8k-train.arrow'), 'train');
  assert.equal(splitOfFile('default/train/0000.parquet'), 'train');
  assert.equal(splitOfFile('data/test.jsonl'), 'test');
  assert.equal(splitOfFile('mine/math.jsonl'), undefined);
});

test('split: a built-in generator has train and eval; a dataset split name must be a name', () => {
  const bad = validateRunConfig({
    workflow: { name: 'single_turn', reward: 'exact_match' },
    taskset: { builtin: 'reverse', split: 'test' },
  });
  assert.match(JSON.stringify(bad.issues), /a built-in generator has the splits train and eval, got 'test'/);
  const odd = validateRunConfig({
    workflow: { name: 'single_turn', reward: 'exact_match' },
    taskset: { path: 'd', split: '../x' },
  });
  assert.match(JSON.stringify(odd.issues), /expected a split name/);
});

test('a dataset folder is read once, not watched live (its other splits would replace the training tasks)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-shards-live-'));
  const store = await openStore(join(dir, 'buffer.db'));
  try {
    mkdirSync(join(dir, 'data'));
    await duck(
      copyParquet(gsm8kSelect(0, 4), join(dir, 'data', 'train-00000-of-00001.parquet'), 'zstd'),
      copyParquet(gsm8kSelect(9, 11), join(dir, 'data', 'test-00000-of-00001.parquet'), 'zstd'),
    );
    const file = join(dir, 'more.parquet');
    await duck(copyParquet(gsm8kSelect(0, 2), file, 'zstd'));
    const cfg = cfgOf({ taskset: { path: dir, format: GSM }, experts: { path: file, format: GSM } });
    const pools = await loadTasks(cfg);
    const tok = CharTokenizer.train(pools.train.map((t) => t.prompt!));
    const live = watchRunFiles(cfg, { runId: 'r', feed: new TaskFeed(cfg, pools.train), pools, tok, store });
    await live.ready;
    await live.close();
    assert.deepEqual(live.watching, [file]);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('rft run refuses a dataset folder without the split asked for, and split beside a file, before any work', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-shards-cfg-'));
  try {
    mkdirSync(join(dir, 'data'));
    await duck(copyParquet(gsm8kSelect(0, 3), join(dir, 'data', 'train-00000-of-00001.parquet'), 'zstd'));
    writeFileSync(join(dir, 't.jsonl'), '{"id": "a", "prompt": "p", "answer": "1"}\n');
    const file = join(dir, 'run.rft.yaml');
    const write = (eval_: string) =>
      writeFileSync(
        file,
        `taskset: { path: data, format: { prompt_key: question, response_key: answer } }\n${eval_}\nworkflow: { name: single_turn, reward: math_answer }\n`,
      );
    write('eval: { path: ., split: test }');
    assert.throws(() => loadRunConfig(file), /field 'eval\.split': no split 'test'; the dataset has train/);
    write('eval: { path: t.jsonl, split: test }');
    assert.throws(
      () => loadRunConfig(file),
      /field 'eval\.split': split chooses the split files of a dataset folder; 't\.jsonl' is one file/,
    );
    write('eval: { path: ., split: train }');
    assert.equal(loadRunConfig(file).eval?.split, 'train');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("rft eval --config --taskset FILE: the taskset's dataset split is not carried onto another file", async () => {
  const { evalOnFile } = await import('../../backend/cli/commands/eval.js');
  const cfg = cfgOf({ taskset: { path: '/data/gsm8k', split: 'main/train', format: GSM } });
  const e = evalOnFile(cfg, '/data/eval.jsonl').eval!;
  assert.deepEqual([e.path, e.split, e.format], ['/data/eval.jsonl', undefined, GSM]);
  const own = cfgOf({
    taskset: { path: '/data/gsm8k', format: GSM },
    eval: { path: '/data/gsm8k', split: 'main/test' },
  });
  assert.equal(evalOnFile(own, '/data/gsm8k').eval!.split, 'main/test');
});
