// The feature matrix (issue 25): each seed feature and the tests that run it briefly and assert on the
// buffer or the metrics what it claims. Most live beside the part they exercise; test/features/ holds
// the ones no other test covered. This file keeps the list honest: every listed test must exist under
// its title (a covering test renamed or deleted fails here), and every file of test/features/ is listed.
// The same list, with what each asserts, is in docs/results.md ("Feature matrix").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Feature -> [test file, a test title (or the literal part of a templated one)] that covers it. */
const MATRIX: Record<string, [string, string][]> = {
  'partial rollouts: segments continue across versions, never trained partial': [
    [
      'test/coordinator/partial-rollout-run.test.ts',
      'tokens per trajectory per explore step stay within the budget; multi-step trajectories are trained, partial rows never',
    ],
    [
      'test/explorer/partial-continue.test.ts',
      "a trajectory cut at the step budget is continued with each later step's weights",
    ],
    ['test/trainer/partial-segments.test.ts', 'loss_segments'],
  ],
  'DPO pairs are formed and trained': [
    ['test/buffer/long2short-run.test.ts', 'explore with length_reward + long2short, then DPO on the stored pairs'],
    ['test/trainer/dpo-pairs.test.ts', 'curation -> pairs -> DPO: the chosen log-prob margin grows'],
  ],
  'synthesized tasks carry origin and parent': [
    [
      'test/coordinator/synth-run.test.ts',
      'memory run: synthesized tasks enter the taskset, are explored and trained on',
    ],
    [
      'test/buffer/synth-augment.test.ts',
      'synthesizer: bounded per round, deduplicated, marked with origin and parent',
    ],
  ],
  'staleness bound under one_step_off and async': [
    ['test/coordinator/sync-offset.test.ts', 'two-process run with sync_offset'],
    ['test/coordinator/async-mode.test.ts', 'every trained experience within max_staleness'],
    [
      'test/coordinator/async-memory.test.ts',
      'memory one_step_off: explore step t waits for v(t-1); rows at most one version old',
    ],
    [
      'test/coordinator/async-memory.test.ts',
      'memory async: the explorer overlaps the trainer, at most max_staleness steps ahead',
    ],
  ],
  'priority and curriculum selectors change selection frequencies': [
    [
      'test/features/selectors-run.test.ts',
      'priority: tasks the policy solves are drawn far less often than ones it fails',
    ],
    ['test/features/selectors-run.test.ts', 'curriculum: the first steps explore the easiest tasks only'],
    ['test/buffer/taskset-selectors.test.ts', 'priority: by default a solved task keeps a floor weight'],
  ],
  'dedupe, sequential selector, zero-variance filtering, reward shaping, MIX expert rows (every placement)': [
    ['test/coordinator/strategies.test.ts', 'task pipeline, selector, experience pipeline and sampler as configured'],
    ['test/coordinator/strategies.test.ts', 'distributed (PostgreSQL): the same pipelines and sampler'],
  ],
  'MIX trains expert rows beside the rollouts': [
    ['test/coordinator/sync-offset.test.ts', 'two-process run with sync_offset'],
    [
      'test/coordinator/batch-size.test.ts',
      'a MIX stage with batch_size 12 trains 6 expert rows and 6 rollouts a step',
    ],
  ],
  'length reward / long2short change lengths': [
    ['test/features/length-reward-run.test.ts', 'length_reward: GRPO on answers all scored right makes them shorter'],
    ['test/buffer/long2short-run.test.ts', 'explore with length_reward + long2short, then DPO on the stored pairs'],
    [
      'test/buffer/pipeline-length-reward.test.ts',
      'default warm-up: without warmup_steps the weight ramps over the first 100 trainer steps',
    ],
  ],
  'multi-turn: environment turns masked out': [
    ['test/explorer/multi-turn.test.ts', 'multi_turn: environment turns are in the response with mask 0 and logprob 0'],
    ['test/coordinator/examples.test.ts', 'environment turns are in the episodes, masked out'],
  ],
  'feedback (rate, promote with edit, reject, undo) lands in the log and pairs': [
    ['test/buffer/feedback.test.ts', 'promote with an edited response creates a new expert experience'],
    ['test/buffer/feedback.test.ts', 'rate and reject are logged with who/when/what; undo reverts exactly that change'],
    ['test/trainer/dpo-pairs.test.ts', 'curation in the server (promote, reject, rate over JSON-RPC)'],
  ],
  'the trainer batch (trainer.batch_size) is what is trained, in every placement': [
    ['test/coordinator/batch-size.test.ts', 'a GRPO stage trains its configured batch of 8 rollouts'],
    ['test/coordinator/memory-batch.test.ts', 'every step trains the whole batch'],
  ],
  'stages end once; stop/resume trains every step once': [
    ['test/trainer/stage-end.test.ts', 'wall_seconds: the budget runs out while a checkpoint is published'],
    [
      'test/coordinator/memory-resume.test.ts',
      'memory synchronizer: stop mid-run, resume, complete; nothing trained twice',
    ],
    ['test/coordinator/kill-resume.test.ts', 'kill -9 of the trainer mid-run, then resume'],
  ],
  "mode train from another run's buffer": [
    ['test/coordinator/train-from.test.ts', 'train_from a SQLite buffer.db (memory)'],
  ],
  'PPO critic trained, reported, saved and resumed': [
    ['test/trainer/critic.test.ts', 'critic_loss per step, critic in each checkpoint'],
  ],
  'explore and bench modes': [
    ['test/coordinator/modes.test.ts', 'explore mode: the endpoint fills the buffer'],
    ['test/coordinator/modes.test.ts', 'bench mode on a checkpoint reproduces the accuracy'],
  ],
  'custom workflows and rewards (workflow.file), ctx.sampling stop tokens': [
    ['test/coordinator/workspace-code.test.ts', 'workflow.file: a custom workflow runs in the explorer'],
    [
      'test/explorer/workflow-sampling.test.ts',
      'a custom workflow spreading ctx.sampling stops at the end-of-turn token',
    ],
  ],
  'reward domains (math, code, k12, vision, multi-turn) end to end': [
    ['test/coordinator/examples.test.ts', ': valid, and a shrunken copy runs end to end'],
  ],
};

test('every test the feature matrix names exists under its title', () => {
  for (const [feature, tests] of Object.entries(MATRIX)) {
    assert.ok(tests.length > 0, feature);
    for (const [file, title] of tests) {
      const path = join(ROOT, file);
      assert.ok(existsSync(path), `${feature}: ${file} is missing`);
      assert.ok(readFileSync(path, 'utf8').includes(title), `${feature}: ${file} has no test titled like '${title}'`);
    }
  }
});

test('every file of test/features/ is in the matrix', () => {
  const listed = new Set(Object.values(MATRIX).flatMap((ts) => ts.map(([f]) => f)));
  for (const f of readdirSync(join(ROOT, 'test/features')).filter(
    (n) => n.endsWith('.test.ts') && n !== 'matrix.test.ts',
  ))
    assert.ok(listed.has(`test/features/${f}`), `test/features/${f} is not listed in MATRIX`);
});
