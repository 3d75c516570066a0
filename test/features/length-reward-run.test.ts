// Feature matrix (issue 25): the length reward changes what a run's policy writes. Two runs from the
// same seed and the same SFT warm-up (expert answers of 1 to 6 characters, so the model ends answers
// at varied lengths), then GRPO under a reward file that calls every answer right: without a length
// term every group's rewards are equal and nothing moves; with length_reward (weight 1, no warm-up)
// the shorter answers of each group score higher and the answers get shorter. The operator's values
// are unit-tested in test/buffer/pipeline-length-reward.test.ts; long2short's pairs and expert copies
// in a run in test/buffer/long2short-run.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { tempWorkspace, tinyConfig } from '../coordinator/tiny-config.js';

const WARMUP = 10;
const RL = 8;

/** Mean generated length of the rollouts sampled by weights of versions [from, to). */
async function meanLength(
  runDir: string,
  runId: string,
  from: number,
  to: number,
): Promise<{ mean: number; n: number; shaped: number }> {
  const store = await openStore(join(runDir, 'buffer.db'));
  try {
    const rows = (await store.list({ runId, source: 'usual', limit: 10_000 })).filter(
      (e) => e.modelVersion >= from && e.modelVersion < to,
    );
    const mean = rows.reduce((a, e) => a + e.responseTokens.length, 0) / rows.length;
    return {
      mean,
      n: rows.length,
      shaped: rows.filter((e) => typeof e.rewardDetails?.length_reward === 'number').length,
    };
  } finally {
    await store.close();
  }
}

async function run(ws: string, runId: string, withLength: boolean) {
  const cfg = tinyConfig({ sync_offset: 0 }, RL, {
    // Expert answers: the task's word reversed, 1..6 characters.
    experts: { path: join(ws, 'experts.jsonl') },
    workflow: { name: 'single_turn', reward: 'always_right', file: join(ws, 'right.mjs') },
    explorer: {
      tasks_per_step: 2,
      repeat_times: 8,
      sampling: { max_new_tokens: 8, temperature: 1 },
      eval_sampling: { max_new_tokens: 8 },
    },
    trainer: { lr: 0.01 },
    placement: 'memory',
    synchronizer: { sync_offset: 0 },
    buffer: { storage: 'sqlite', max_staleness: 0 },
    experience_pipeline: [
      { name: 'validity' },
      ...(withLength ? [{ name: 'length_reward', weight: 1, warmup_steps: 0 }] : []),
      { name: 'advantage' },
    ],
    stages: [
      { name: 'warmup', algorithm: { name: 'sft' }, steps: WARMUP, batch_size: 12, lr: 0.01 },
      { name: 'grpo', algorithm: { name: 'grpo' }, steps: RL },
    ],
  });
  const s = await runJob({ config: cfg, workspace: ws, runId, trustWorkspaceCode: true });
  assert.equal(s.trainer_steps, WARMUP + RL);
  // The first RL step's rollouts (the warm-up's answers) and the last three steps'.
  return {
    first: await meanLength(s.run_dir, runId, WARMUP, WARMUP + 1),
    last: await meanLength(s.run_dir, runId, WARMUP + RL - 3, WARMUP + RL),
  };
}

test('length_reward: GRPO on answers all scored right makes them shorter; without it their length stays', async (t) => {
  const ws = tempWorkspace();
  try {
    const words = ['a', 'bc', 'def', 'ghij', 'klmno', 'pqrstu'];
    writeFileSync(
      join(ws, 'experts.jsonl'),
      Array.from({ length: 24 }, (_, i) => words[i % 6]!)
        .map((w, i) => JSON.stringify({ prompt: `reverse: ${w}${i}`, response: [...w].reverse().join('') }))
        .join('\n') + '\n',
    );
    writeFileSync(
      join(ws, 'right.mjs'),
      "export default function (rft) { rft.register('reward', 'always_right', () => ({ reward: 1 })); }\n",
    );
    const plain = await run(ws, 'plain', false);
    const short = await run(ws, 'short', true);
    const msg = `lengths: plain ${plain.first.mean.toFixed(2)} -> ${plain.last.mean.toFixed(2)}, length_reward ${short.first.mean.toFixed(2)} -> ${short.last.mean.toFixed(2)}`;
    assert.equal(plain.first.shaped, 0);
    assert.ok(short.first.shaped > 0, 'the length term was applied');
    t.diagnostic(msg);
    // The same seed and warm-up: both runs' first RL step samples the same answers.
    assert.equal(short.first.mean, plain.first.mean, msg);
    assert.ok(short.last.mean < plain.last.mean - 0.5, msg);
    assert.ok(short.last.mean < short.first.mean - 0.5, msg);
    assert.ok(Math.abs(plain.last.mean - plain.first.mean) < 1, msg);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
