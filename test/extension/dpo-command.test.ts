// Train DPO on Curated Pairs… (issue 40 item 12): through the real extension (fake vscode) and a real
// `rft serve`. A run trains and explores; a person promotes one response of a task, rejects that
// response's original and two others, and rates two responses of another task. The command counts
// the pairs in the backend (`buffer/pairs`), writes a DPO config that starts from the run's newest
// checkpoint and reads the run's buffer, and opens it; that config, run as written, trains DPO on
// exactly the pairs the source made (the copied rows' metadata ids follow their prefix, so a
// promoted copy is never paired with its own rejected original). A run with no pairs says how to make some.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import {
  activateWith,
  deactivateFrom,
  type fakeContext,
  vscode,
  workspaceDir,
} from '../../tools/fake-vscode/harness.js';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { FeedbackService } from '../../backend/buffer/feedback.js';
import { pairCounts } from '../../backend/buffer/pairs.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { tinyConfig } from '../coordinator/tiny-config.js';

let ws: string;
let ctx: ReturnType<typeof fakeContext>;
let source: Record<string, number>;

before(async () => {
  vscode.resetFake();
  ws = workspaceDir({});
  const cfg = tinyConfig({ sync_offset: 0 }, 2, {
    stages: [{ name: 'grpo', algorithm: { name: 'grpo' }, steps: 3 }],
    explorer: {
      tasks_per_step: 2,
      repeat_times: 4,
      sampling: { max_new_tokens: 4 },
      eval_sampling: { max_new_tokens: 4 },
    },
  });
  cfg.placement = 'memory';
  await runJob({ config: cfg, workspace: ws, runId: 'src' });
  await runJob({ config: { ...cfg, name: 'bare' }, workspace: ws, runId: 'bare' });
  const store = await openStore(join(ws, '.rft', 'runs', 'src', 'buffer.db'));
  try {
    const rows = (await store.list({ runId: 'src', source: 'usual', limit: 10_000 })).filter(
      (e) => e.status === 'ok' && e.split !== 'eval',
    );
    const byTask = new Map<string, typeof rows>();
    for (const e of rows) (byTask.get(e.taskId) ?? byTask.set(e.taskId, []).get(e.taskId)!).push(e);
    const tasks = [...byTask.values()].filter((g) => g.length >= 3);
    assert.ok(tasks.length >= 2, 'two tasks with three responses each');
    const fb = new FeedbackService(store);
    const [a, b, c] = tasks[0]!;
    await fb.promote(a!.id, 'ann');
    for (const r of [a!, b!, c!]) await fb.reject(r.id, 'ann');
    const [x, y] = tasks[1]!;
    await fb.rate(x!.id, 5, 'bob');
    await fb.rate(y!.id, 1, 'bob');
    source = await pairCounts(store, 'src');
  } finally {
    await store.close();
  }
  // The copy over the two other rejected responses (not over its own original), and the rating.
  assert.deepEqual(source, { curation: 2, rating: 1, long2short: 0 });
  ({ ctx } = await activateWith(ws));
});

after(async () => {
  await deactivateFrom(ctx);
  rmSync(ws, { recursive: true, force: true });
});

test('Train DPO on Curated Pairs…: the config counts the pairs, starts from the newest checkpoint, and trains DPO on those pairs', async () => {
  vscode.answers.quickPick.push((items) => (items as unknown as { id: string }[]).find((i) => i.id === 'src'));
  const uri = (await vscode.commands.executeCommand('rftStudio.trainDpo')) as { fsPath: string } | undefined;
  assert.ok(uri, 'a config written');
  assert.match(uri!.fsPath, /tiny-dpo\.rft\.yaml$/);
  const text = readFileSync(uri!.fsPath, 'utf8');
  assert.match(text, /^# DPO on the 3 preference pair\(s\) curated in run tiny \(src\): 2 curation, 1 rating\./);
  const raw = parse(text) as Record<string, unknown>;
  const { config, issues } = validateRunConfig(raw);
  assert.ok(config, JSON.stringify(issues));
  assert.equal(config!.mode, 'train');
  assert.match(String(config!.model.checkpoint), /runs\/src\/checkpoints\/v\d+/);
  assert.equal(config!.buffer.train_from?.run, 'src');
  assert.equal(config!.trainer.batch_size, 6, 'three pairs a step: chosen, rejected rows');
  assert.ok(
    vscode.recorded.executed.some((e) => e.command === '(showTextDocument)' && String(e.args[0]) === uri!.fsPath),
    'opened for review',
  );

  // The config as written, run: DPO on the source's pairs, none more.
  const s = await runJob({ config: { ...config!, placement: 'memory' }, workspace: ws, runId: 'dpo' });
  assert.equal(s.trainer_steps, config!.trainer.steps);
  const store = await openStore(join(ws, '.rft', 'runs', 'dpo', 'buffer.db'));
  try {
    assert.deepEqual(await pairCounts(store, 'dpo'), source);
    // Every pair trained on (3 passes), each side a row copied from the source run.
    const pairs = await store.listPairs({ runId: 'dpo' });
    assert.equal(pairs.length, 3);
    for (const p of pairs) {
      assert.ok(p.useCount >= 1, `${p.id} trained on`);
      assert.ok(p.chosenId.startsWith('src/') && p.rejectedId.startsWith('src/'), p.id);
    }
  } finally {
    await store.close();
  }
  const train = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((r) => r.kind === 'train');
  assert.ok(train.length > 0 && train.every((r) => Number.isFinite(r.loss)), 'DPO steps with a finite loss');
});

test('a run without pairs says how to make some, and writes nothing', async () => {
  vscode.recorded.messages.length = 0;
  const r = await vscode.commands.executeCommand('rftStudio.trainDpo', 'bare');
  assert.equal(r, undefined);
  assert.match(vscode.recorded.messages.at(-1)!.message, /has no preference pairs yet\. A pair is a promoted response/);
});
