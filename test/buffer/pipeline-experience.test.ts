import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Experience } from '../../backend/core/types.js';
import { DEFAULT_EXPERIENCE_PIPELINE, ExperiencePipeline } from '../../backend/buffer/pipeline/experience/index.js';
import { PipelineConfigError } from '../../backend/buffer/pipeline/task/index.js';

let n = 0;
function exp(groupId: string, reward: number, over: Partial<Experience> = {}): Experience {
  const tokens = over.responseTokens ?? [5, 6, 7];
  return {
    id: `e${n++}`,
    taskId: groupId,
    groupId,
    runId: 'r',
    source: 'usual',
    promptTokens: [1, 2],
    promptText: 'q',
    responseTokens: tokens,
    responseText: 'abc',
    actionMask: tokens.map(() => 1),
    logprobs: tokens.map(() => -0.5),
    modelVersion: 3,
    reward,
    status: 'ok',
    useCount: 0,
    createdAt: 0,
    ...over,
  };
}

/** A small local group-normalised advantage (the coordinator passes the trainer's GRPO one). */
function groupAdvantage(exps: Experience[]): void {
  const groups = new Map<string, Experience[]>();
  for (const e of exps) (groups.get(e.groupId) ?? groups.set(e.groupId, []).get(e.groupId)!).push(e);
  for (const g of groups.values()) {
    const m = g.reduce((a, e) => a + e.reward, 0) / g.length;
    const sd = Math.sqrt(g.reduce((a, e) => a + (e.reward - m) ** 2, 0) / g.length);
    for (const e of g) e.advantages = e.responseTokens.map(() => (e.reward - m) / (sd + 1e-6));
  }
}

test('validity marks bad experiences invalid with a reason; reward_filter drops them', () => {
  const raw = [
    exp('g', 1),
    exp('g', 0, { responseTokens: [], responseText: '', actionMask: [], logprobs: [] }),
    exp('g', 1, { actionMask: [1, 1] }),
    exp('g', 1, { logprobs: [-1, NaN, -1] }),
    exp('g', 1, { logprobs: [-1, 0.5, -1] }),
    exp('g', 1, { logprobs: [] }),
    exp('g', NaN),
    exp('x', 1, { source: 'expert', modelVersion: -1, logprobs: [] }), // hand-written: no log-probs is fine
  ];
  const p = ExperiencePipeline.fromConfig([{ name: 'validity' }, { name: 'reward_filter' }]);
  const r = p.run(raw);
  assert.deepEqual(
    r.trainable.map((e) => e.id),
    [raw[0]!.id, raw[7]!.id],
  );
  assert.deepEqual(
    r.dropped.map((d) => d.experience.statusReason),
    ['empty_response', 'mask_length', 'nonfinite_logprob', 'positive_logprob', 'logprobs_length', 'nonfinite_reward'],
  );
  assert.equal(r.counts['dropped:invalid'], 6);
  assert.equal(r.counts['invalid:empty_response'], 1);
  assert.equal(raw[1]!.status, 'ok', 'caller objects untouched');
  // Kept (not dropped) invalid ones are stored but excluded from training.
  const keep = ExperiencePipeline.fromConfig([
    { name: 'validity' },
    { name: 'reward_filter', drop_invalid: false },
  ]).run(raw);
  assert.equal(keep.excluded.length, 6);
  assert.ok(keep.excluded.every((e) => e.status === 'invalid' && e.metadata?.excludedFromTraining === true));
});

test('infra failures pass through untouched and excluded; never rewarded 0 and trained on', () => {
  const infra = exp('g', NaN, {
    status: 'infra_failure',
    statusReason: 'sandbox crashed',
    responseTokens: [],
    responseText: '',
    actionMask: [],
    logprobs: [],
  });
  const raw = [exp('g', 1), exp('g', 0), infra];
  const p = ExperiencePipeline.fromConfig(
    [
      { name: 'validity' },
      { name: 'reward_filter', drop_zero_variance: true },
      { name: 'reward_shaping', clip: { min: -1, max: 1 } },
      { name: 'advantage' },
    ],
    { advantage: groupAdvantage },
  );
  const r = p.run(raw);
  assert.equal(r.trainable.length, 2);
  assert.equal(r.excluded.length, 1);
  const out = r.excluded[0]!;
  assert.equal(out.status, 'infra_failure');
  assert.equal(out.statusReason, 'sandbox crashed');
  assert.ok(Number.isNaN(out.reward), 'reward not replaced by 0');
  assert.equal(out.advantages, undefined);
  assert.equal(out.metadata?.excludedFromTraining, true);
  assert.equal(r.counts.infra_failure, 1);
  assert.deepEqual(
    Object.keys(r.counts).filter((k) => k.startsWith('dropped:')),
    [],
  );
  assert.deepEqual(
    r.experiences.map((e) => e.id),
    [raw[0]!.id, raw[1]!.id, infra.id],
  );
});

test('zero-variance groups dropped when asked; expert data is not a group', () => {
  const raw = [
    exp('a', 1),
    exp('a', 1),
    exp('b', 1),
    exp('b', 0),
    exp('c', 0),
    exp('x', 1, { source: 'expert', modelVersion: -1, logprobs: [] }),
  ];
  const r = ExperiencePipeline.fromConfig([{ name: 'reward_filter', drop_zero_variance: true }]).run(raw);
  assert.deepEqual(
    r.trainable.map((e) => e.groupId),
    ['b', 'b', 'x'],
  );
  assert.equal(r.counts['dropped:zero_variance'], 3);
  assert.equal(ExperiencePipeline.fromConfig([{ name: 'reward_filter' }]).run(raw).trainable.length, 6);
});

test('reward shaping: format bonus, length penalty, clip; raw reward kept', () => {
  const p = ExperiencePipeline.fromConfig([
    {
      name: 'reward_shaping',
      format_bonus: { pattern: '^<answer>', bonus: 0.5 },
      length_penalty: { target_tokens: 2, coef: 0.1 },
      clip: { max: 1.2 },
    },
  ]);
  const r = p.run([
    exp('g', 1, { responseText: '<answer>3' }),
    exp('g', 0, { responseTokens: [1, 2, 3, 4, 5] }),
    exp('g', 1, { responseTokens: [1, 2] }),
  ]);
  const [a, b, c] = r.trainable;
  assert.equal(a!.reward, 1.2); // 1 + 0.5 - 0.1 -> 1.4, clipped
  assert.deepEqual(a!.rewardDetails, { raw_reward: 1, format_bonus: 0.5, length_penalty: 0.1 });
  assert.ok(Math.abs(b!.reward - -0.3) < 1e-12);
  assert.equal(c!.reward, 1);
  assert.equal(c!.rewardDetails, undefined);
  assert.equal(r.counts.shaped, 2);
});

test('advantage: the injected function fills per-token advantages of usual experiences; a bad one is caught', () => {
  const raw = [
    exp('g', 1),
    exp('g', 0),
    exp('h', 0.5),
    exp('h', 0.5),
    exp('x', 1, { source: 'expert', modelVersion: -1, logprobs: [] }),
  ];
  const r = ExperiencePipeline.fromConfig(DEFAULT_EXPERIENCE_PIPELINE, { advantage: groupAdvantage }).run(raw);
  const adv = r.trainable.map((e) => e.advantages?.[0]);
  assert.ok(adv[0]! > 0.99 && adv[1]! < -0.99);
  assert.equal(adv[2], 0);
  assert.equal(adv[4], undefined, 'expert data gets no GRPO advantage by default');
  assert.equal(r.counts.advantage, 4);
  assert.throws(
    () => ExperiencePipeline.fromConfig([{ name: 'advantage' }]),
    (e: unknown) =>
      e instanceof PipelineConfigError &&
      /experience_pipeline\[0\]: advantage: .*no advantage function/.test(e.message),
  );
  const broken = ExperiencePipeline.fromConfig([{ name: 'advantage' }], {
    advantage: (xs) => xs.forEach((e) => (e.advantages = [1])),
  });
  assert.throws(() => broken.run([exp('g', 1)]), /without 3 finite advantages/);
  assert.throws(
    () => ExperiencePipeline.fromConfig([{ name: 'reward_shaping', clip: { max: 'one' } }]),
    /experience_pipeline\[0\]\.clip\.max: expected number, got string/,
  );
});
