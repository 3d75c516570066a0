// A run (one run loop, in-process) whose explore stage has length_reward and long2short in its
// experience pipeline, then a train-only DPO stage: the buffer gets the expert copies and the pairs,
// and the DPO steps train on stored pairs of one prompt each.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateRunConfig } from '../../backend/core/config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore, resolveBufferUrl } from '../../backend/buffer/storage/index.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-l2s-run-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('explore with length_reward + long2short, then DPO on the stored pairs', async () => {
  const { config, issues } = validateRunConfig({
    name: 'l2s',
    seed: 4,
    model: { size: 'tiny-0.4m', max_seq_len: 32 },
    tokenizer: { kind: 'char' },
    taskset: { builtin: 'reverse', size: 20 },
    eval: { builtin: 'reverse', size: 4, split: 'eval' },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    // A fresh model is never right: threshold 0 counts every valid sample as correct, so the
    // shortest of each group is chosen over every longer one (what long2short does with right answers).
    experience_pipeline: [
      { name: 'validity' },
      { name: 'reward_filter', drop_invalid: false },
      { name: 'length_reward', weight: 0.1, correct_threshold: 0, warmup_steps: 0 },
      { name: 'long2short', correct_threshold: 0 },
      { name: 'advantage' },
    ],
    explorer: {
      tasks_per_step: 2,
      repeat_times: 8,
      sampling: { max_new_tokens: 6 },
      eval_sampling: { max_new_tokens: 4 },
    },
    placement: 'memory',
    stages: [
      { name: 'explore', algorithm: { name: 'grpo' }, steps: 3 },
      { name: 'dpo', algorithm: { name: 'dpo' }, steps: 2, mode: 'train', batch_size: 4 },
    ],
  });
  assert.deepEqual(issues, []);
  const s = await runJob({ config: config!, workspace: dir, runId: 'l2s' });
  assert.equal(s.trainer_steps, 5);
  const store = await openStore(resolveBufferUrl(s.run_dir));
  try {
    const usual = await store.list({ runId: 'l2s', source: 'usual', limit: 1000 });
    assert.ok(
      usual.some((e) => typeof e.rewardDetails?.length_reward === 'number'),
      'length reward applied',
    );
    const experts = await store.list({ runId: 'l2s', source: 'expert', limit: 1000 });
    assert.ok(
      experts.length > 0 && experts.every((e) => e.metadata?.origin === 'shortest_rejection'),
      'shortest-rejection experts',
    );
    const pairs = await store.listPairs({ runId: 'l2s' });
    assert.ok(pairs.length >= 2 && pairs.every((p) => p.origin === 'long2short'));
    const byId = new Map(usual.map((e) => [e.id, e]));
    // The two DPO steps logged the DPO loss (on 2 pairs each: batch_size 4 rows).
    const dpoSteps = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"dpo_loss"'))
      .map((l) => JSON.parse(l) as Record<string, number>);
    assert.equal(dpoSteps.length, 2);
    assert.ok(dpoSteps.every((m) => Number.isFinite(m.dpo_loss)));
    const used = pairs.filter((p) => p.useCount > 0);
    assert.equal(
      used.reduce((a, p) => a + p.useCount, 0),
      4,
      '2 DPO steps x 2 pairs',
    );
    for (const p of used) {
      const [c, r] = [byId.get(p.chosenId)!, byId.get(p.rejectedId)!];
      assert.deepEqual(c.promptTokens, r.promptTokens);
      assert.ok(c.responseTokens.length < r.responseTokens.length, 'chosen is the shorter');
    }
  } finally {
    await store.close();
  }
});
