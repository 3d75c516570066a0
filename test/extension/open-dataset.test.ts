// Open Dataset…: a GSM8K-shaped dataset (Parquet written by DuckDB) in the hub cache layout, found
// through HF_HUB_CACHE by a real `rft serve`, listed by split with its rows; the chosen split's
// columns mapped (question -> prompt, answer -> answer) into a new config that reads the folder with
// split, its test split as eval; the run loads both.
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import {
  activateWith,
  deactivateFrom,
  type fakeContext,
  vscode,
  workspaceDir,
} from '../../tools/fake-vscode/harness.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { loadTasks } from '../../backend/coordinator/setup/tasks.js';
import { copyParquet, duck, gsm8kSelect } from '../buffer/columnar-fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'rft-open-dataset-'));
const cache = join(root, 'hub');
const entry = join(cache, 'datasets--openai--gsm8k');
const snap = join(entry, 'snapshots', 'e53f048856ff4f594e959d75785d2c2d37b678ee');
const savedCache = process.env.HF_HUB_CACHE;
let ctx: ReturnType<typeof fakeContext>;
let ws: string;

beforeEach(() => {
  for (const q of Object.values(vscode.answers)) q.length = 0;
});

before(async () => {
  vscode.resetFake();
  mkdirSync(join(snap, 'main'), { recursive: true });
  mkdirSync(join(entry, 'refs'));
  writeFileSync(join(entry, 'refs', 'main'), 'e53f048856ff4f594e959d75785d2c2d37b678ee');
  await duck(
    copyParquet(gsm8kSelect(0, 30), join(snap, 'main', 'train-00000-of-00002.parquet'), 'zstd'),
    copyParquet(gsm8kSelect(30, 45), join(snap, 'main', 'train-00001-of-00002.parquet'), 'snappy'),
    copyParquet(gsm8kSelect(500, 508), join(snap, 'main', 'test-00000-of-00001.parquet'), 'gzip'),
  );
  ws = workspaceDir({ 'README.md': '# ws\n' });
  process.env.HF_HUB_CACHE = cache;
  ({ ctx } = await activateWith(ws));
});

after(async () => {
  await deactivateFrom(ctx);
  if (savedCache === undefined) delete process.env.HF_HUB_CACHE;
  else process.env.HF_HUB_CACHE = savedCache;
  rmSync(root, { recursive: true, force: true });
  rmSync(ws, { recursive: true, force: true });
});

test('Open Dataset… lists the cached splits with their rows, maps the chosen one and writes a config the run loads', async () => {
  let offered: { label: string; description?: string }[] = [];
  let review: string[] = [];
  vscode.answers.quickPick.push((items) => {
    offered = items as { label: string; description?: string }[];
    return offered.find((i) => i.label === 'openai/gsm8k: main/train');
  });
  vscode.answers.quickPick.push((items) => {
    review = (items as { label: string }[]).map((i) => i.label);
    return (items as { label: string }[]).find((i) => i.label.startsWith('$(check) Use:'));
  });
  const done = (await vscode.commands.executeCommand('rftStudio.openDataset')) as
    | { config: { fsPath: string }; created: boolean }
    | undefined;
  assert.deepEqual(
    offered.filter((i) => i.label.startsWith('openai/')).map((i) => [i.label, i.description]),
    [
      ['openai/gsm8k: main/test', '8 rows, 1 file'],
      ['openai/gsm8k: main/train', '45 rows, 2 files'],
    ],
  );
  assert.ok(done?.created, `no config written: ${JSON.stringify(vscode.recorded.messages.at(-1))}`);
  assert.equal(review[0], '$(check) Use: question -> prompt, answer');
  const cfg = parse(readFileSync(done.config.fsPath, 'utf8'));
  assert.deepEqual(cfg.taskset, {
    path: entry,
    split: 'main/train',
    domain: 'math',
    selector: 'shuffle',
    format: { prompt_key: 'question' },
  });
  assert.deepEqual(cfg.eval, { path: entry, split: 'main/test', domain: 'math', format: { prompt_key: 'question' } });
  const pools = await loadTasks(loadRunConfig(done.config.fsPath));
  assert.equal(pools.train.length, 45);
  assert.deepEqual([pools.train[44]!.prompt, pools.train[44]!.answer], ['What is 44 plus 1?', '45']);
  assert.equal(pools.eval.length, 8);
});
