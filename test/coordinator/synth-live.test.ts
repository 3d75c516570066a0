// A live taskset and task synthesis together: saving the taskset file while a run goes on replaces
// the file's tasks for the next steps, and the tasks synthesized so far stay in the selector (they
// live in the buffer, not in the file).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateRunConfig } from '../../backend/core/config.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { loadTasks, TaskFeed } from '../../backend/coordinator/setup/tasks.js';
import { taskSynthesis } from '../../backend/coordinator/task-synthesis.js';
import { watchRunFiles } from '../../backend/coordinator/live.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';

const line = (id: string, expr: string, v: number) =>
  JSON.stringify({ id, prompt: `Compute ${expr}. Put the result in <answer></answer>.`, answer: String(v) });

test('saving the taskset file keeps the synthesized tasks in the selector', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-synth-live-'));
  const file = join(dir, 'tasks.jsonl');
  writeFileSync(file, [line('a', '1 + 2', 3), line('b', '4 * 5', 20)].join('\n') + '\n');
  const store = await openStore(join(dir, 'buffer.db'));
  try {
    const { config: cfg, issues } = validateRunConfig({
      seed: 1,
      taskset: { path: file, pipeline: [{ name: 'synthesize', proposer: 'augment', per_step: 2 }] },
      eval: { path: file },
      workflow: { name: 'single_turn', reward: 'math_answer' },
    });
    assert.ok(cfg, JSON.stringify(issues));
    const pools = await loadTasks(cfg);
    const tok = CharTokenizer.train(pools.train.map((t) => t.prompt!));
    const feed = new TaskFeed(cfg, pools.train);
    const hook = taskSynthesis(cfg, { runId: 'r', store, feed, pools, tok })!;
    // Eval = the taskset here: its prompts are known, so new ones differ from both.
    await hook.afterStep(pools.train, undefined as never, 0);
    const synth = pools.train.filter((t) => String(t.metadata?.origin) === 'synth:augment');
    assert.equal(synth.length, 2);
    const changes: number[] = [];
    const live = watchRunFiles(cfg, { runId: 'r', feed, pools, tok, store, onEvent: (e) => changes.push(e.tasks) });
    await live.ready;
    try {
      writeFileSync(file, [line('a', '1 + 2', 3), line('c', '9 - 7', 2), line('d', '8 / 4', 2)].join('\n') + '\n');
      const end = Date.now() + 20_000;
      while (changes.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(changes, [5], 'three file tasks and the two synthesized ones');
      assert.deepEqual(
        pools.train.map((t) => t.id),
        ['a', 'c', 'd', ...synth.map((t) => t.id)],
      );
      const seen = new Set(feed.next(50).map((t) => t.id));
      for (const t of synth) assert.ok(seen.has(t.id), `${t.id} still selected`);
      assert.ok(!seen.has('b'), 'the removed file task is gone');
    } finally {
      await live.close();
    }
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
