// Task synthesis in real runs (taskset.pipeline synthesize, proposer augment on built-in arithmetic):
// synthesized tasks enter the buffer's task table with their origin, the selector hands them to the
// explorer and the trainer trains on their rollouts; a stopped run resumes with the same stored
// tasks (not regenerated) and no round repeated. One process (memory) and explorer / trainer
// processes (checkpoint) run the same hook.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import type { Task } from '../../backend/core/types.js';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';
import { tempWorkspace } from './tiny-config.js';

function config(
  method: 'memory' | 'checkpoint',
  steps: number,
  synth: Record<string, unknown> = { proposer: 'augment', per_step: 2, max_total: 9 },
): RunConfig {
  const { config, issues } = validateRunConfig({
    name: 'synth',
    seed: 2,
    model: { size: 'tiny-0.4m', max_seq_len: 96 },
    tokenizer: { kind: 'char' },
    // A small taskset: a shuffle epoch is 3 steps, so synthesized tasks come up within the run.
    taskset: { builtin: 'arith', size: 6, pipeline: [{ name: 'synthesize', ...synth }] },
    eval: { builtin: 'arith', size: 4, split: 'eval' },
    workflow: { name: 'single_turn', reward: 'math_answer' },
    explorer: {
      tasks_per_step: 2,
      repeat_times: 2,
      sampling: { max_new_tokens: 3 },
      eval_sampling: { max_new_tokens: 3 },
    },
    trainer: { batch_size: 4 },
    placement: method,
    synchronizer: { sync_offset: 0 },
    stages: [{ name: 'main', algorithm: { name: 'grpo' }, steps }],
  });
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}

const records = (runDir: string, kind: string): Record<string, unknown>[] =>
  existsSync(join(runDir, 'metrics.jsonl'))
    ? readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
        .split('\n')
        .filter((l) => l.includes(`"kind":"${kind}"`))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];

async function synthesized(
  db: string,
  runId: string,
): Promise<{ tasks: Task[]; trainedOn: Set<string>; explored: Set<string> }> {
  const store = await openStore(db);
  try {
    const tasks = (await store.listTasks(runId)).filter((t) => String(t.metadata?.origin).startsWith('synth:'));
    const ids = new Set(tasks.map((t) => t.id));
    const explored = new Set(
      (await store.list({ runId, limit: 10_000 })).map((e) => e.taskId).filter((id) => ids.has(id)),
    );
    const trainedOn = new Set<string>();
    const last = (await store.lastConsumedStep('trainer', runId)) ?? -1;
    for (let s = 0; s <= last; s++)
      for (const e of await store.getMany(await store.consumed('trainer', s, runId)))
        if (ids.has(e.taskId)) trainedOn.add(e.taskId);
    return { tasks, trainedOn, explored };
  } finally {
    await store.close();
  }
}

async function checkTasks(tasks: Task[]) {
  assert.equal(new Set(tasks.map((t) => t.prompt)).size, tasks.length, 'no synthesized prompt twice');
  for (const t of tasks) {
    assert.equal(t.metadata?.origin, 'synth:augment');
    assert.match(String(t.metadata?.parent), /^arith-train-\d+$/);
    const r = await rewardFns.get('math_answer')(t, String(t.metadata?.reference));
    assert.equal(r.details?.correct, 1, `${t.prompt}: the stored reference is right`);
  }
}

test('memory run: synthesized tasks enter the taskset, are explored and trained on; a resumed run keeps them', async () => {
  const ws = tempWorkspace();
  try {
    const runDir = join(ws, '.rft', 'runs', 's1');
    const ac = new AbortController();
    const watcher = setInterval(() => {
      if (records(runDir, 'train').length >= 4) ac.abort();
    }, 20);
    const first = await runJob({
      config: config('memory', 9),
      workspace: ws,
      runId: 's1',
      signal: ac.signal,
      checkpointEvery: 2,
    }).finally(() => clearInterval(watcher));
    assert.ok(first.trainer_steps < 9, `stopped early (${first.trainer_steps})`);
    const before = await synthesized(join(runDir, 'buffer.db'), 's1');
    assert.ok(before.tasks.length >= 2, `${before.tasks.length} synthesized before the stop`);
    await checkTasks(before.tasks);

    const done = await runJob({ resume: 's1', workspace: ws, checkpointEvery: 2 });
    assert.equal(done.trainer_steps, 9);
    const after = await synthesized(join(runDir, 'buffer.db'), 's1');
    await checkTasks(after.tasks);
    // Stored, not regenerated: every task from before the stop is there unchanged.
    for (const t of before.tasks)
      assert.deepEqual(
        after.tasks.find((x) => x.id === t.id),
        t,
      );
    assert.equal(after.tasks.length, 9, 'max_total bounds the run');
    // One round per explore step, never the same step twice (also across the resume), at most per_step each.
    const rounds = records(runDir, 'synthesize');
    const steps = rounds.map((r) => r.step as number);
    assert.equal(new Set(steps).size, steps.length, `rounds ${steps.join(',')}`);
    for (const r of rounds) assert.ok((r.accepted as number) <= 2);
    assert.equal(
      rounds.reduce((a, r) => a + (r.accepted as number), 0),
      9,
    );
    assert.ok(after.explored.size >= 1, 'the explorer drew synthesized tasks');
    assert.ok(after.trainedOn.size >= 1, 'the trainer trained on rollouts of synthesized tasks');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('explorer and trainer processes: the explorer process synthesizes, stores and explores the new tasks', async () => {
  const ws = tempWorkspace();
  try {
    const r = await runJob({ config: config('checkpoint', 5), workspace: ws, runId: 's2' });
    assert.equal(r.trainer_steps, 5);
    const runDir = join(ws, '.rft', 'runs', 's2');
    const s = await synthesized(join(runDir, 'buffer.db'), 's2');
    assert.ok(s.tasks.length >= 4, `${s.tasks.length} synthesized`);
    await checkTasks(s.tasks);
    assert.ok(s.explored.size >= 1, 'the explorer process drew synthesized tasks');
    assert.ok(s.trainedOn.size >= 1, 'the trainer process trained on their rollouts');
    assert.ok(records(runDir, 'synthesize').length >= 2);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test("memory run, proposer endpoint: a chat server's tasks pass the reward check and are trained on; the model proposer asks the policy", async () => {
  // A real OpenAI-compatible server: each request gets a new arithmetic task (the parent's first
  // operand plus 100 + the request's seed offset) with its solution; every third has a wrong one.
  let asked = 0;
  const srv = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const b = JSON.parse(body) as { seed: number; messages: { role: string; content: string }[] };
      const user = b.messages.at(-1)!.content;
      const expr = /Compute (.+?)\. Put/
        .exec(user)![1]!
        .replace(/\d+/, (n) => String(Number(n) + 100 + (b.seed % 1000)));
      const value = Function(`return (${expr});`)() as number;
      const wrong = asked++ % 3 === 2;
      const content = JSON.stringify({
        prompt: `Compute ${expr}. Put the result in <answer></answer>.`,
        answer: String(value),
        solution: `<answer>${wrong ? value + 1 : value}</answer>`,
      });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ choices: [{ message: { role: 'assistant', content }, finish_reason: 'stop' }] }));
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  const ws = tempWorkspace();
  try {
    await runJob({
      config: config('memory', 4, {
        proposer: 'endpoint',
        per_step: 2,
        attempts: 3,
        endpoint: { base_url: url, model: 'm' },
        prompt: 'New task like: {prompt}',
      }),
      workspace: ws,
      runId: 'e1',
    });
    const runDir = join(ws, '.rft', 'runs', 'e1');
    const s = await synthesized(join(runDir, 'buffer.db'), 'e1');
    assert.ok(asked >= 9, `${asked} requests`);
    assert.ok(s.tasks.length >= 6, `${s.tasks.length} synthesized`);
    for (const t of s.tasks) {
      assert.equal(t.metadata?.origin, 'synth:endpoint');
      assert.equal((await rewardFns.get('math_answer')(t, String(t.metadata?.reference))).details?.correct, 1);
    }
    const rounds = records(runDir, 'synthesize');
    assert.ok(
      rounds.every((r) => (r.failed_check as number) >= 1 || (r.accepted as number) === 2),
      JSON.stringify(rounds),
    );
    assert.ok(s.explored.size >= 1 && s.trainedOn.size >= 1, 'explored and trained on');

    // proposer model: the policy itself is asked (a tiny untrained model writes no task: every proposal is counted malformed).
    await runJob({
      config: config('memory', 2, {
        proposer: 'model',
        per_step: 1,
        attempts: 2,
        prompt: 'New: {prompt}',
        max_new_tokens: 8,
      }),
      workspace: ws,
      runId: 'm1',
    });
    const mr = records(join(ws, '.rft', 'runs', 'm1'), 'synthesize');
    assert.equal(mr.length, 2);
    for (const r of mr) assert.deepEqual([r.proposed, r.accepted, r.malformed], [2, 0, 2], JSON.stringify(r));
  } finally {
    await new Promise<void>((r) => srv.close(() => r()));
    rmSync(ws, { recursive: true, force: true });
  }
});

test('explore mode (no trainer): the explorer synthesizes after each step, one round a step', async () => {
  const ws = tempWorkspace();
  try {
    const cfg = {
      ...config('memory', 3),
      mode: 'explore' as const,
      stages: undefined,
      trainer: { ...config('memory', 3).trainer, steps: 3 },
    };
    await runJob({ config: cfg, workspace: ws, runId: 'x1' });
    const runDir = join(ws, '.rft', 'runs', 'x1');
    const s = await synthesized(join(runDir, 'buffer.db'), 'x1');
    assert.ok(s.tasks.length >= 4, `${s.tasks.length} synthesized`);
    await checkTasks(s.tasks);
    assert.deepEqual(
      records(runDir, 'synthesize').map((r) => r.step),
      [0, 1, 2],
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
