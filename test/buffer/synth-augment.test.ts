// Task synthesis (taskset.pipeline `synthesize`): exact augmenters (every synthesized arithmetic and
// countdown task's reference is verified by the reward function, and its answer recomputed here
// independently), the synthesizer's bounds, dedupe and origin marks, refusal of unverifiable or
// unchecked proposals (counted), and the config's paths.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Task } from '../../backend/core/types.js';
import { Rng } from '../../backend/core/rng.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { checkRunConfig } from '../../backend/coordinator/config-check.js';
import { checkDistributedConfig } from '../../backend/coordinator/distributed/setup.js';
import { TaskPipeline } from '../../backend/buffer/pipeline/task/index.js';
import {
  TaskSynthesizer,
  synthParams,
  type Proposer,
  type ReferenceScore,
} from '../../backend/buffer/pipeline/task/synthesize.js';
import { augmentProposer, augmentTask } from '../../backend/explorer/task-proposers.js';
import { builtinTasksets } from '../../backend/explorer/tasksets/index.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';

/** The run's check: the reward's `correct` detail. */
const scoreWith =
  (name: string): ReferenceScore =>
  async (task, response) => {
    const r = await rewardFns.get(name)(task, response);
    return { ok: r.status === 'ok', correct: r.details?.correct === 1, reason: r.reason };
  };

/** Integer arithmetic evaluated by JavaScript itself (test only: digits, + - * / and parentheses). */
const jsValue = (expr: string): number => {
  assert.match(expr, /^[\d\s+\-*/()]+$/);
  return Function(`return (${expr});`)() as number;
};

test('arith augmenter: new operands, the answer is the exact value, math_answer accepts the reference', async () => {
  const parents = builtinTasksets.get('arith').generate(40, 3, 'train');
  const rng = new Rng(7);
  let made = 0;
  for (const parent of parents)
    for (let k = 0; k < 3; k++) {
      const p = augmentTask(parent, rng);
      assert.ok(p.task, `${parent.prompt}: ${p.error}`);
      made++;
      const expr = /Compute (.+?)\. Put/.exec(p.task.prompt!)![1]!;
      assert.notEqual(p.task.prompt, parent.prompt);
      // Same shape: the operators of the parent, in order.
      assert.deepEqual(expr.replace(/\d+/g, 'N'), /Compute (.+?)\. Put/.exec(parent.prompt!)![1]!.replace(/\d+/g, 'N'));
      assert.equal(Number(p.task.answer), jsValue(expr), `${expr} = ${p.task.answer}`);
      assert.ok(Number.isInteger(Number(p.task.answer)));
      const r = await rewardFns.get('math_answer')({ ...p.task, id: 'x' }, p.reference!);
      assert.equal(r.details?.correct, 1, `${p.task.prompt} with ${p.reference}`);
    }
  assert.equal(made, 120);
});

test('countdown augmenter: the countdown reward verifies every reference expression', async () => {
  const parents = builtinTasksets.get('countdown').generate(40, 5, 'train');
  const rng = new Rng(11);
  for (const parent of parents)
    for (let k = 0; k < 3; k++) {
      const p = augmentTask(parent, rng);
      assert.ok(p.task, `${parent.prompt}: ${p.error}`);
      const md = p.task.metadata!;
      const nums = md.numbers as number[];
      assert.equal(nums.length, (parent.metadata!.numbers as number[]).length);
      assert.ok(p.task.prompt!.includes(nums.join(', ')), p.task.prompt);
      assert.ok(p.task.prompt!.includes(`make ${md.target}.`), p.task.prompt);
      assert.equal(jsValue(md.solution as string), md.target, `${md.solution} = ${md.target}`);
      const r = await rewardFns.get('countdown')({ ...p.task, id: 'x' }, p.reference!);
      assert.equal(r.details?.correct, 1, `${p.task.prompt} with ${p.reference}: ${r.details?.why}`);
      // The check is real: the same expression for another target fails.
      const wrong = await rewardFns.get('countdown')(
        { ...p.task, id: 'x', metadata: { ...md, target: (md.target as number) + 1 } },
        p.reference!,
      );
      assert.equal(wrong.details?.correct, 0);
    }
});

test('augmenter refuses tasks it has no exact rule for', () => {
  const p = augmentTask(
    { id: 'r1', taskset: 'builtin:reverse', domain: 'text', prompt: 'Reverse: abc', answer: 'cba' },
    new Rng(1),
  );
  assert.equal(p.task, undefined);
  assert.match(p.error!, /no exact augmenter/);
});

test('synthesizer: bounded per round, deduplicated, marked with origin and parent, every accepted task verified', async () => {
  const parents = builtinTasksets.get('countdown').generate(6, 1, 'train');
  const params = synthParams.parse({ proposer: 'augment', per_step: 3, max_total: 7 });
  const s = new TaskSynthesizer(params, augmentProposer, scoreWith('countdown'));
  s.know(parents);
  const r1 = await s.round(parents, 0, 42);
  assert.equal(r1.tasks.length, 3);
  assert.equal(r1.counts.accepted, 3);
  assert.equal(r1.counts.proposed, 3);
  for (const t of r1.tasks) {
    assert.equal(t.metadata?.origin, 'synth:augment');
    assert.ok(parents.some((p) => p.id === t.metadata?.parent));
    assert.equal(t.metadata?.synth_step, 0);
    assert.ok(t.id.startsWith(`${t.metadata?.parent}~s0.`));
    assert.equal((await rewardFns.get('countdown')(t, t.metadata!.reference as string)).details?.correct, 1);
  }
  // The same seed proposes the same tasks again: all are duplicates now.
  const again = new TaskSynthesizer(params, augmentProposer, scoreWith('countdown'));
  again.know([...parents, ...r1.tasks]);
  const r2 = await again.round(parents, 0, 42);
  assert.equal(r2.tasks.length, 3, 'later proposals fill the round');
  assert.ok(r2.counts.duplicate >= 3, JSON.stringify(r2.counts));
  const prompts = new Set([...r1.tasks, ...r2.tasks].map((t) => t.prompt));
  assert.equal(prompts.size, 6);
  // max_total: 7 in all, then no more rounds.
  assert.equal(again.synthesized, 6, 'r1 tasks count toward the run total');
  const r3 = await again.round(parents, 1, 43);
  assert.equal(r3.tasks.length, 1);
  assert.equal(again.due(2), false);
});

test('synthesizer refuses proposals it cannot check, and counts each reason', async () => {
  const parent: Task = {
    id: 'p',
    taskset: 'f',
    domain: 'math',
    prompt: 'Compute 2 + 2. Put the result in <answer></answer>.',
    answer: '4',
  };
  const proposals: Proposer = async () => [
    { parent, task: { taskset: 'f', domain: 'math', prompt: 'Compute 3 + 3.', answer: '6' } }, // no reference
    { parent, task: { taskset: 'f', domain: 'math', prompt: 'Compute 3 + 4.', answer: '7' }, reference: '  ' }, // blank reference
    {
      parent,
      task: { taskset: 'f', domain: 'math', prompt: 'Compute 3 + 5.', answer: '9' },
      reference: '<answer>8</answer>',
    }, // wrong
    { parent, task: { taskset: 'f', domain: 'math', prompt: 'Compute 3 + 6.' }, reference: '<answer>9</answer>' }, // no answer: reward cannot run
    { parent, error: 'the reply holds no JSON object' },
    { parent, infra: true, error: 'HTTP 500' },
    {
      parent,
      task: {
        taskset: 'f',
        domain: 'math',
        prompt: 'compute  2 + 2.  Put the result in <answer></answer>.',
        answer: '4',
      },
      reference: '<answer>4</answer>',
    }, // duplicate
    {
      parent,
      task: { taskset: 'f', domain: 'math', prompt: 'Compute 3 + 7.', answer: '10' },
      reference: '<answer>10</answer>',
    }, // good
  ];
  const s = new TaskSynthesizer(
    synthParams.parse({ proposer: 'model', per_step: 4 }),
    proposals,
    scoreWith('math_answer'),
  );
  s.know([parent]);
  const r = await s.round([parent], 5, 1);
  assert.deepEqual(r.counts, {
    proposed: 8,
    accepted: 1,
    unverifiable: 2,
    failed_check: 1,
    unchecked: 2,
    malformed: 1,
    duplicate: 1,
  });
  assert.deepEqual(
    r.tasks.map((t) => t.prompt),
    ['Compute 3 + 7.'],
  );
  assert.equal(r.tasks[0]!.metadata?.origin, 'synth:model');
  assert.ok(r.refusals.some((l) => /unverifiable: no reference solution/.test(l)));

  // A task an empty response passes checks nothing.
  const lenient: ReferenceScore = async () => ({ ok: true, correct: true });
  const s2 = new TaskSynthesizer(
    synthParams.parse({ proposer: 'model' }),
    async () => [{ parent, task: { taskset: 'f', domain: 'math', prompt: 'Say anything.' }, reference: 'x' }],
    lenient,
  );
  const r2 = await s2.round([parent], 0, 1);
  assert.equal(r2.counts.failed_check, 1);
  assert.match(r2.refusals[0]!, /empty response earns the reward/);
});

const base = (pipeline: unknown, extra: Record<string, unknown> = {}) => ({
  taskset: { builtin: 'arith', size: 20, pipeline },
  workflow: { name: 'single_turn', reward: 'math_answer' },
  ...extra,
});

test('synthesize config: every field read or refused at its path', () => {
  const issuesOf = (raw: unknown) => {
    const v = validateRunConfig(raw);
    return v.config
      ? checkRunConfig(v.config).map((i) => `${i.path}: ${i.message}`)
      : v.issues.map((i) => `${i.path}: ${i.message}`);
  };
  assert.deepEqual(issuesOf(base([{ name: 'synthesize', proposer: 'augment', per_step: 2 }])), []);
  assert.deepEqual(
    issuesOf(
      base([
        {
          name: 'synthesize',
          proposer: 'endpoint',
          endpoint: { base_url: 'http://127.0.0.1:9', model: 'm' },
          prompt: 'New task like {prompt}',
        },
      ]),
    ),
    [],
  );
  assert.ok(
    issuesOf(base([{ name: 'synthesize', proposer: 'endpoint' }])).some((i) =>
      i.startsWith('taskset.pipeline[0].endpoint: required'),
    ),
  );
  assert.ok(
    issuesOf(base([{ name: 'dedupe' }, { name: 'synthesize', proposer: 'augment', prompt: 'x' }])).some((i) =>
      i.startsWith('taskset.pipeline[1].prompt: read with proposer model or endpoint only'),
    ),
  );
  assert.ok(
    issuesOf(base([{ name: 'synthesize', proposer: 'model', endpoint: { base_url: 'http://x', model: 'm' } }])).some(
      (i) => i.startsWith('taskset.pipeline[0].endpoint: read with proposer endpoint only'),
    ),
  );
  assert.ok(
    issuesOf(base([{ name: 'synthesize', proposer: 'augment', per_stp: 2 }])).some((i) =>
      i.startsWith('taskset.pipeline[0].per_stp: unknown parameter'),
    ),
  );
  assert.ok(
    issuesOf(base([{ name: 'synthesize', proposer: 'guess' }])).some((i) =>
      i.startsWith('taskset.pipeline[0].proposer'),
    ),
  );
  assert.deepEqual(
    issuesOf({
      ...base([{ name: 'synthesize', proposer: 'augment' }]),
      taskset: { builtin: 'reverse', pipeline: [{ name: 'synthesize', proposer: 'augment' }] },
      workflow: { name: 'single_turn', reward: 'exact_match' },
    }),
    [
      "taskset.pipeline[0].proposer: no exact augmenter for built-in 'reverse' (augment takes arith, countdown); use proposer model or endpoint",
    ],
  );
  // Outside the training taskset, and in bench mode, nothing reads it.
  // (The schema refuses it: a taskset reference's kind, core/config-taskset.ts unreadByKind.)
  assert.deepEqual(
    validateRunConfig({
      ...base(undefined),
      eval: { builtin: 'arith', size: 5, pipeline: [{ name: 'dedupe' }, { name: 'synthesize', proposer: 'augment' }] },
    }).issues.map((i) => i.path),
    ['eval.pipeline[1]'],
  );
  assert.deepEqual(
    validateRunConfig({ ...base([{ name: 'synthesize', proposer: 'augment' }]), mode: 'bench' }).issues.map(
      (i) => i.path,
    ),
    ['taskset.pipeline[0]'],
  );
  assert.deepEqual(validateRunConfig(base([{ name: 'synthesize', proposer: 'augment' }])).issues, []);
  // A distributed run synthesizes in its trainer for the selectors its job plan picks with; a selector that learns from outcomes is refused naming the step.
  const { config } = validateRunConfig({
    ...base([{ name: 'synthesize', proposer: 'augment' }]),
    trainer: { steps: 3 },
  });
  assert.equal(checkDistributedConfig(config!), null);
  const { config: prio } = validateRunConfig({
    ...base([{ name: 'synthesize', proposer: 'augment' }]),
    taskset: { builtin: 'arith', selector: 'priority', pipeline: [{ name: 'synthesize', proposer: 'augment' }] },
    trainer: { steps: 3 },
  });
  assert.equal(
    checkDistributedConfig(prio!),
    'taskset.pipeline[0]: synthesize in a distributed run takes taskset.selector shuffle, sequential or random (not priority)',
  );
  // The loaded pool passes through the operator unchanged (rounds run per explore step).
  const tasks = builtinTasksets.get('arith').generate(5, 1, 'train');
  assert.deepEqual(TaskPipeline.fromConfig([{ name: 'synthesize', proposer: 'augment' }]).run(tasks).tasks, tasks);
});
