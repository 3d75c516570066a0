// A selector that learns from outcomes in a distributed run: the trainer's TaskFeed (the same one
// every placement builds in setup/tasks.ts) picks each step's tasks once, a restarted trainer gets the
// same picks and selector state back, and trained batches teach it (priority: 1 - success rate).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateRunConfig } from '../../../backend/core/config.js';
import type { Experience, Task } from '../../../backend/core/types.js';
import { TaskFeed } from '../../../backend/coordinator/setup/tasks.js';
import { PlannedSelector } from '../../../backend/coordinator/distributed/selector-plan.js';
import { stepJobsOf } from '../../../backend/coordinator/distributed/jobs-plan.js';

const tasks: Task[] = Array.from({ length: 6 }, (_, i) => ({ id: `t${i}`, taskset: 's', prompt: `p${i}` }) as Task);
const { config } = validateRunConfig({
  name: 'p',
  model: { size: 'tiny-0.4m' },
  tokenizer: { kind: 'char' },
  seed: 5,
  taskset: { builtin: 'reverse', size: 8, selector: 'priority' },
  workflow: { name: 'single_turn', reward: 'exact_match' },
  explorer: { tasks_per_step: 2, repeat_times: 2 },
  trainer: { batch_size: 4, steps: 5 },
  algorithm: { name: 'grpo' },
});
const exp = (taskId: string, reward: number) => ({ taskId, reward, source: 'usual', status: 'ok' }) as Experience;

test('priority in a distributed run: each step picked once, restored after a restart, taught by trained batches', async () => {
  let saved: unknown = null;
  const save = async (s: unknown) => void (saved = JSON.parse(JSON.stringify(s)));
  const a = new PlannedSelector(new TaskFeed(config!, tasks), tasks, 2, save);
  const s0 = (await a.tasksFor(0)).map((t) => t.id);
  const s1 = (await a.tasksFor(1)).map((t) => t.id);
  assert.equal(s0.length, 2);
  assert.deepEqual(
    (await a.tasksFor(0)).map((t) => t.id),
    s0,
    'a step queued again (sync_offset) gets the same tasks',
  );
  assert.deepEqual(
    stepJobsOf(
      { tasks, seed: 5, tasksPerStep: 2, sync: { interval: 1, offset: 1, stageStartVersion: 0 } },
      1,
      await a.tasksFor(1),
    ).map((j) => `${j.id}=${j.task.id}`),
    s1.map((id, k) => `1:${k}=${id}`),
  );
  // A restarted trainer: the same picks for steps not trained yet, the selector where it was.
  const b = new PlannedSelector(new TaskFeed(config!, tasks), tasks, 2, save);
  b.restore(saved as never);
  assert.deepEqual(
    (await b.tasksFor(1)).map((t) => t.id),
    s1,
  );
  const nextA = (await a.tasksFor(2)).map((t) => t.id);
  assert.deepEqual(
    (await b.tasksFor(2)).map((t) => t.id),
    nextA,
    'restored selector state picks as the original would',
  );
  // Taught by outcomes: tasks always solved fall behind tasks never solved.
  const c = new PlannedSelector(new TaskFeed(config!, tasks), tasks, 2, save);
  await c.trained(0, [
    ...['t0', 't1', 't2'].flatMap((id) => [exp(id, 1), exp(id, 1)]),
    ...['t3', 't4', 't5'].flatMap((id) => [exp(id, 0), exp(id, 0)]),
  ]);
  const picks = (await Promise.all([10, 11, 12, 13, 14, 15].map((t) => c.tasksFor(t)))).flat().map((t) => t.id);
  const hard = picks.filter((id) => ['t3', 't4', 't5'].includes(id)).length;
  assert.ok(hard > picks.length / 2, `priority prefers the unsolved tasks: ${picks.join(',')}`);
});
