// Which jobs feed which trainer step (a pure function of the plan, so a restarted trainer re-derives
// the same jobs), the top-up jobs, and what a distributed run refuses up front.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateRunConfig, type RunConfig } from '../../../backend/core/config.js';
import type { Task } from '../../../backend/core/types.js';
import { stepJobs, topUpJob, type JobPlan } from '../../../backend/coordinator/distributed/jobs-plan.js';
import { checkDistributedConfig } from '../../../backend/coordinator/distributed/setup.js';

const tasks: Task[] = Array.from({ length: 6 }, (_, i) => ({ id: `t${i}`, taskset: 's', prompt: `p${i}` }) as Task);
const plan = (over: Partial<JobPlan> = {}): JobPlan => ({
  tasks,
  seed: 3,
  tasksPerStep: 2,
  sync: { interval: 1, offset: 1, stageStartVersion: 0 },
  ...over,
});

test('step t has tasks_per_step jobs t:k, each runnable from the version the synchronizer allows', () => {
  const j = stepJobs(plan(), 4);
  assert.deepEqual(
    j.map((x) => x.id),
    ['4:0', '4:1'],
  );
  assert.ok(
    j.every((x) => x.target === 4 && x.requiredVersion === 3),
    'sync_offset 1: step 4 may run on v3',
  );
  assert.equal(stepJobs(plan(), 0)[0]!.requiredVersion, 0, 'never below the stage start');
  assert.equal(
    stepJobs(plan({ sync: { interval: 2, offset: 0, stageStartVersion: 0 } }), 5)[0]!.requiredVersion,
    4,
    'published every 2 steps',
  );
  assert.deepEqual(stepJobs(plan(), 4), j, 'the same plan gives the same jobs (a restarted trainer adds nothing new)');
  // A stage's plan ends at its last step: sync_offset never queues jobs for the next stage's steps.
  const staged = plan({ end: 5, sync: { interval: 1, offset: 1, stageStartVersion: 3 } });
  assert.equal(stepJobs(staged, 4).length, 2);
  assert.deepEqual(stepJobs(staged, 5), []);
  assert.equal(stepJobs(staged, 3)[0]!.requiredVersion, 3, "a stage's first step runs on the weights it starts from");
});

test('selectors: shuffle covers every task once per epoch; sequential in order; random is seeded', () => {
  const epoch = (p: JobPlan) => [0, 1, 2].flatMap((t) => stepJobs(p, t).map((x) => x.task.id));
  const shuffled = epoch(plan());
  assert.deepEqual([...shuffled].sort(), tasks.map((t) => t.id).sort(), 'each task once in the first epoch');
  assert.notDeepEqual(
    shuffled,
    tasks.map((t) => t.id),
    'in a shuffled order',
  );
  assert.notDeepEqual(epoch(plan({ seed: 4 })), shuffled, 'the order follows the seed');
  const second = [3, 4, 5].flatMap((t) => stepJobs(plan(), t).map((x) => x.task.id));
  assert.deepEqual([...second].sort(), tasks.map((t) => t.id).sort(), 'and once again in the second');
  assert.deepEqual(
    epoch(plan({ selector: 'sequential' })),
    tasks.map((t) => t.id),
  );
  const r = epoch(plan({ selector: 'random' }));
  assert.deepEqual(epoch(plan({ selector: 'random' })), r);
  assert.ok(r.every((id) => tasks.some((t) => t.id === id)));
});

test("top-up jobs: t:x<n>, the step's version, seeded", () => {
  const a = topUpJob(plan(), 7, 0);
  assert.equal(a.id, '7:x0');
  assert.equal(a.requiredVersion, 6);
  assert.deepEqual(topUpJob(plan(), 7, 0), a);
  assert.equal(topUpJob(plan(), 7, 1).id, '7:x1');
});

function cfg(over: Record<string, unknown>): RunConfig {
  const { config, issues } = validateRunConfig({
    name: 'd',
    model: { size: 'tiny-0.4m' },
    tokenizer: { kind: 'char' },
    taskset: { builtin: 'reverse', size: 8 },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    explorer: { tasks_per_step: 2, repeat_times: 2 },
    // With stages, each stage has its own steps and algorithm (config-reads.ts).
    trainer: { batch_size: 4, ...(over.stages ? {} : { steps: 5 }) },
    ...(over.stages ? {} : { algorithm: { name: 'grpo' } }),
    buffer: { storage: 'postgres', max_staleness: 1 },
    placement: 'checkpoint',
    synchronizer: { sync_interval: 1, sync_offset: 1 },
    ...over,
  });
  assert.ok(config, JSON.stringify(issues));
  return config;
}

test('a distributed config: stages bounded by steps (the last by steps or wall_seconds), trainer modes, any selector; anything else refused naming the field', () => {
  assert.equal(checkDistributedConfig(cfg({})), null);
  assert.equal(checkDistributedConfig(cfg({ taskset: { builtin: 'reverse', size: 8, selector: 'sequential' } })), null);
  // Stages (an SFT warm-up, then RL) run distributed through the one run loop.
  assert.equal(
    checkDistributedConfig(
      cfg({
        stages: [
          { name: 'a', algorithm: { name: 'sft' }, steps: 2 },
          { name: 'b', algorithm: { name: 'grpo' }, steps: 2 },
        ],
      }),
    ),
    null,
  );
  assert.equal(checkDistributedConfig(cfg({ algorithm: { name: 'sft' } })), null);
  // The last stage may end on a wall-clock budget; an earlier one needs steps (jobs name their step's stage).
  assert.equal(
    checkDistributedConfig(
      cfg({
        stages: [
          { name: 'a', algorithm: { name: 'sft' }, steps: 2 },
          { name: 'b', algorithm: { name: 'grpo' }, wall_seconds: 60 },
        ],
      }),
    ),
    null,
  );
  assert.match(
    checkDistributedConfig(
      cfg({
        stages: [
          { name: 'a', algorithm: { name: 'sft' }, wall_seconds: 60 },
          { name: 'b', algorithm: { name: 'grpo' }, steps: 2 },
        ],
      }),
    )!,
    /^stages\[0\]\.wall_seconds:/,
  );
  // An explore stage or mode bench: the schema refuses them (config-reads.ts); a config built in code is refused too.
  const explore = { stages: [{ name: 'a', algorithm: { name: 'grpo' }, steps: 2, mode: 'explore' }] };
  assert.ok(validateRunConfig({ ...cfg({}), ...explore }).issues.some((i) => i.path === 'stages[0].mode'));
  const exploreStage = cfg({ stages: [{ name: 'a', algorithm: { name: 'grpo' }, steps: 2 }] });
  exploreStage.stages![0]!.mode = 'explore';
  assert.match(checkDistributedConfig(exploreStage)!, /^stages\[0\]\.mode:/);
  assert.match(checkDistributedConfig({ ...cfg({}), mode: 'bench' })!, /^mode:/);
  // Selectors that learn from outcomes are planned by the trainer's TaskFeed (selector-plan.ts).
  assert.equal(checkDistributedConfig(cfg({ taskset: { builtin: 'reverse', size: 8, selector: 'priority' } })), null);
  assert.equal(checkDistributedConfig(cfg({ taskset: { builtin: 'reverse', size: 8, selector: 'curriculum' } })), null);
});
