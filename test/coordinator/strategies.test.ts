// One small config, from the user's files, through every process model: in-process (synchronizer
// memory), explorer and trainer as child processes (synchronizer checkpoint), and distributed over
// PostgreSQL (when a server starts). Each must apply the same setup: the task pipeline (dedupe: the
// duplicate tasks are never explored), the selector (sequential: only the head of the task list is
// explored), the experience pipeline (reward_filter drops zero-variance groups: none reaches the
// buffer or the trainer; reward_shaping: every stored reward is shaped) and the sampler (MIX's
// bundle share: every trained batch holds expert rows); monitor.eval_every evaluates in both local ones.
// The eval set is a share held out of the taskset (eval.holdout): every placement evaluates on the
// same held-out tasks and never explores one.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import type { Experience } from '../../backend/core/types.js';
import { runJob } from '../../backend/coordinator/run.js';
import { loadTasks } from '../../backend/coordinator/setup/tasks.js';
import { openStore, type ExperienceStore } from '../../backend/buffer/storage/index.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-strategies-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const WORDS = Array.from({ length: 24 }, (_, i) => 'abcdefghijklmnopqrstuvwxyz'.slice(i % 20, (i % 20) + 3 + (i % 3)));
// Lines 2 and 4 repeat the prompts of lines 1 and 3: dedupe keeps the first of each.
const rows = WORDS.map((w, i) => ({
  key: `w${i}`,
  text: `reverse: ${w}`,
  rev: [...w].reverse().join(''),
  partial_credit: true,
}));
rows.splice(1, 0, { ...rows[0]!, key: 'dup0' });
rows.splice(3, 0, { ...rows[2]!, key: 'dup1' });
writeFileSync(join(dir, 'tasks.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
writeFileSync(
  join(dir, 'experts.jsonl'),
  WORDS.slice(0, 16)
    .map((w) => JSON.stringify({ text: `reverse: ${w}`, demo: [...w].reverse().join('') }))
    .join('\n') + '\n',
);
const ORDER = rows.filter((r) => !r.key.startsWith('dup')).map((r) => r.key);
const TPS = 2;
const STEPS = 3;

function config(method: 'memory' | 'checkpoint'): RunConfig {
  const format = { id_key: 'key', prompt_key: 'text', response_key: 'rev' };
  const { config, issues } = validateRunConfig({
    name: 'strategies',
    seed: 3,
    model: { size: 'tiny-0.4m', max_seq_len: 32 },
    tokenizer: { kind: 'char' },
    taskset: { path: join(dir, 'tasks.jsonl'), format, selector: 'sequential', pipeline: [{ name: 'dedupe' }] },
    eval: { holdout: 0.25, seed: 1 },
    experts: { path: join(dir, 'experts.jsonl'), format: { prompt_key: 'text', response_key: 'demo' } },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    experience_pipeline: [
      { name: 'validity' },
      { name: 'reward_filter', drop_zero_variance: true },
      { name: 'reward_shaping', offset: 10 },
      { name: 'advantage' },
    ],
    // 8 samples a group and a learning rate too small to collapse the fresh model onto one answer:
    // partial-credit rewards then vary within most groups, so steps fill despite the filter.
    explorer: {
      tasks_per_step: TPS,
      repeat_times: 8,
      sampling: { max_new_tokens: 4 },
      eval_sampling: { max_new_tokens: 4 },
    },
    // (No batch_size: the MIX batch is one explore step's 16 rollouts plus its expert half.)
    trainer: { lr: 1e-6 },
    buffer: { max_staleness: 1 },
    placement: method,
    // A periodic held-out eval after stage step 2, in whichever process trains.
    monitor: { eval_every: 2 },
    stages: [{ name: 'mix', algorithm: { name: 'mix' }, steps: STEPS }],
  });
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}

// The held-out tasks, as setup picks them (the same in every process that loads the config).
const HELD = new Set((await loadTasks(config('memory'))).eval.map((t) => t.id));
const TRAIN_ORDER = ORDER.filter((id) => !HELD.has(id));

/** Every evaluation scored the held-out share, and the summary says where the eval set came from. */
function checkEvals(metricsFile: string, evalSet: string, what: string): void {
  assert.equal(
    evalSet,
    `25% of the taskset held out by seed 1: ${HELD.size} of ${ORDER.length} tasks (eval.holdout)`,
    what,
  );
  const evals = readFileSync(metricsFile, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number>)
    .filter((r) => (r.kind as unknown) === 'eval');
  assert.ok(evals.length >= 2, `${what}: ${evals.length} evals`);
  for (const e of evals)
    assert.equal(
      e.n + e.infra_failures,
      HELD.size,
      `${what}: an eval scored ${e.n} + ${e.infra_failures} of the ${HELD.size} held-out tasks`,
    );
}

function std(xs: number[]): number {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / xs.length);
}

/** The same checks on the buffer every strategy leaves. */
async function checkBuffer(
  store: ExperienceStore,
  runId: string,
  what: string,
  sequentialCalls?: number,
): Promise<void> {
  const usual: Experience[] = await store.list({ runId, source: 'usual', limit: 10_000 });
  assert.ok(usual.length > 0, `${what}: explored something`);
  const ids = new Set(usual.map((e) => e.taskId));
  assert.ok(!ids.has('dup0') && !ids.has('dup1'), `${what}: a task the pipeline removed was explored`);
  for (const id of ids)
    assert.ok(
      TRAIN_ORDER.includes(id),
      HELD.has(id) ? `${what}: held-out task ${id} was explored` : `${what}: unknown task ${id}`,
    );
  if (sequentialCalls !== undefined) {
    const head = new Set(TRAIN_ORDER.slice(0, sequentialCalls * TPS));
    for (const id of ids)
      assert.ok(
        head.has(id),
        `${what}: task ${id} is not among the first ${sequentialCalls * TPS} of the sequential order`,
      );
  }
  const groups = new Map<string, Experience[]>();
  for (const e of usual.filter((x) => x.status === 'ok'))
    (groups.get(e.groupId) ?? groups.set(e.groupId, []).get(e.groupId)!).push(e);
  assert.ok(groups.size > 0, `${what}: some group kept`);
  for (const [g, es] of groups) {
    assert.ok(std(es.map((e) => e.reward)) > 1e-6, `${what}: zero-variance group ${g} reached the buffer`);
    for (const e of es) {
      const raw = e.rewardDetails?.raw_reward;
      assert.equal(typeof raw, 'number', `${what}: reward of ${e.id} not shaped`);
      assert.ok(Math.abs(e.reward - ((raw as number) + 10)) < 1e-9, `${what}: shaped reward ${e.reward} from ${raw}`);
    }
  }
  const experts = new Set((await store.list({ runId, source: 'expert', limit: 1000 })).map((e) => e.id));
  assert.equal(experts.size, 16, `${what}: the experts file`);
  const byId = new Map(usual.map((e) => [e.id, e]));
  let trained = 0;
  for (let step = 0; step < STEPS; step++) {
    const batch = await store.consumed('trainer', step, runId);
    if (batch.length === 0) continue;
    trained++;
    assert.ok(
      batch.some((id) => experts.has(id)),
      `${what}: step ${step} has no expert rows (MIX's expert share)`,
    );
    for (const id of batch) {
      if (experts.has(id)) continue;
      const e = byId.get(id);
      assert.ok(e, `${what}: step ${step} trained on ${id}, which is not in the buffer`);
      assert.equal(e.status, 'ok');
    }
  }
  assert.ok(trained >= STEPS - 1, `${what}: ${trained} recorded batches`);
}

function pipelineCalls(runDir: string): number {
  return readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.includes('"kind":"pipeline"')).length;
}

for (const method of ['memory', 'checkpoint'] as const) {
  test(`synchronizer ${method}: task pipeline, selector, experience pipeline and sampler as configured`, async () => {
    const ws = mkdtempSync(join(dir, `ws-${method}-`));
    const s = await runJob({ config: config(method), workspace: ws, runId: method });
    assert.equal(s.trainer_steps, STEPS);
    // monitor.eval_every: start, the periodic eval after step 2, final, in step order.
    assert.deepEqual(
      s.evals.map((e) => `${e.stage}@${e.step}`),
      ['start@0', 'mix@2', 'final@3'],
    );
    checkEvals(join(s.run_dir, 'metrics.jsonl'), s.eval_set, method);
    const calls = pipelineCalls(s.run_dir);
    assert.ok(calls >= STEPS, `${calls} explore rounds`);
    const store = await openStore(join(s.run_dir, 'buffer.db'));
    try {
      await checkBuffer(store, method, method, calls);
    } finally {
      await store.close();
    }
  });
}

test('distributed (PostgreSQL): the same pipelines and sampler', async (t) => {
  const pg = startPg();
  if ('skip' in pg) return t.skip(pg.skip);
  try {
    const url = pgSchemaUrl(pg.url);
    const cfg = config('checkpoint');
    await createDistributedRun(cfg, url, 'dist', join(dir, 'weights'));
    const stop = new AbortController();
    const explorer = distributedExplorer({ url, runId: 'dist', signal: stop.signal, leaseMs: 20_000 });
    try {
      const r = await distributedTrainer({ url, runId: 'dist' });
      assert.equal(r.done, true);
    } finally {
      stop.abort();
      await explorer;
    }
    const store = await openStore(url);
    try {
      // Top-up jobs (for groups the filter dropped) pick any task, so only the pipelines and the sampler are checked here.
      await checkBuffer(store, 'dist', 'distributed');
    } finally {
      await store.close();
    }
  } finally {
    pg.stop();
  }
});

// Issue 17 item 4: a config with stages runs distributed through the same run loop: an SFT warm-up
// on the experts file (no jobs queued, no explorer needed), then MIX with explorers; the trainer's
// metrics.jsonl, evaluations (start, after the warm-up, eval_every, final), summary.json and report
// are those of a local run.
test('distributed (PostgreSQL): SFT warm-up then MIX, logged and evaluated like a local run', async (t) => {
  const pg = startPg();
  if ('skip' in pg) return t.skip(pg.skip);
  try {
    const url = pgSchemaUrl(pg.url);
    const base = config('checkpoint');
    const cfg: RunConfig = {
      ...base,
      stages: [
        { ...base.stages![0]!, name: 'warmup', algorithm: { name: 'sft', params: {} }, steps: 2, batch_size: 8 },
        { ...base.stages![0]!, name: 'mix', steps: STEPS },
      ],
    };
    await createDistributedRun(cfg, url, 'staged', join(dir, 'weights-staged'));
    const stop = new AbortController();
    const explorer = distributedExplorer({ url, runId: 'staged', signal: stop.signal, leaseMs: 20_000 });
    let r;
    try {
      r = await distributedTrainer({ url, runId: 'staged', outDir: join(dir, 'staged-out') });
      assert.equal(r.done, true);
      assert.equal(r.step, 2 + STEPS);
    } finally {
      stop.abort();
      await explorer;
    }
    const recs = readFileSync(join(r.outDir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      recs.filter((x) => x.kind === 'stage').map((x) => x.stage),
      ['warmup', 'mix'],
    );
    assert.deepEqual(
      recs.filter((x) => x.kind === 'train').map((x) => `${x.stage}@${x.step}`),
      ['warmup@0', 'warmup@1', 'mix@2', 'mix@3', 'mix@4'],
    );
    const summary = JSON.parse(readFileSync(join(r.outDir, 'summary.json'), 'utf8')) as {
      evals: { stage: string; step: number; accuracy: number }[];
      trainer_steps: number;
      base_accuracy: number;
      final_accuracy: number;
      report: string;
      eval_set: string;
    };
    checkEvals(join(r.outDir, 'metrics.jsonl'), summary.eval_set, 'distributed');
    // start, eval_every 2 at the warm-up's step 2 and its stage-end eval (the base of the last stage),
    // eval_every 2 in MIX (its stage step 2 = v4), final: as a local run lists them.
    assert.deepEqual(
      summary.evals.map((e) => `${e.stage}@${e.step}`),
      ['start@0', 'warmup@2', 'warmup@2', 'mix@4', 'final@5'],
    );
    assert.equal(summary.trainer_steps, 5);
    assert.equal(summary.base_accuracy, summary.evals[2]!.accuracy);
    assert.equal(summary.final_accuracy, r.eval.final!.accuracy);
    assert.ok(existsSync(summary.report), 'report.html');
    const store = await openStore(url);
    try {
      const experts = new Set((await store.list({ runId: 'staged', source: 'expert', limit: 1000 })).map((e) => e.id));
      for (const step of [0, 1]) {
        const batch = await store.consumed('trainer', step, 'staged');
        assert.equal(batch.length, 8, `warm-up step ${step}: the stage's batch_size`);
        assert.ok(
          batch.every((id) => experts.has(id)),
          `warm-up step ${step} trains on expert rows only`,
        );
      }
      const usual = await store.list({ runId: 'staged', source: 'usual', limit: 10_000 });
      assert.ok(usual.length > 0, 'MIX explored');
      // No job was planned for a warm-up step: every explored experience feeds a MIX step.
      for (const e of usual)
        assert.ok(Number(String(e.metadata?.job).split(':')[0]) >= 2, `experience of job ${String(e.metadata?.job)}`);
      for (const step of [2, 3, 4])
        assert.ok(
          (await store.consumed('trainer', step, 'staged')).some((id) => !experts.has(id)),
          `MIX step ${step} has explored rows`,
        );
    } finally {
      await store.close();
    }
  } finally {
    pg.stop();
  }
});

// The distributed trainer stopped inside the second stage and started again: it resumes in that
// stage at its step (the start and warm-up evals are not repeated), trains every step once, and
// ends with the same summary a run without the stop writes.
test('distributed (PostgreSQL): a trainer stopped inside MIX resumes in MIX; every step trained once', async (t) => {
  const pg = startPg();
  if ('skip' in pg) return t.skip(pg.skip);
  try {
    const url = pgSchemaUrl(pg.url);
    const base = config('checkpoint');
    const cfg: RunConfig = {
      ...base,
      monitor: { ...base.monitor, eval_every: 0 },
      stages: [
        { ...base.stages![0]!, name: 'warmup', algorithm: { name: 'sft', params: {} }, steps: 2, batch_size: 8 },
        { ...base.stages![0]!, name: 'mix', steps: 4 },
      ],
    };
    await createDistributedRun(cfg, url, 'resumed', join(dir, 'weights-resumed'));
    const out = join(dir, 'resumed-out');
    const stopEx = new AbortController();
    const explorer = distributedExplorer({ url, runId: 'resumed', signal: stopEx.signal, leaseMs: 20_000 });
    try {
      const stop = new AbortController();
      const mixSteps = () =>
        existsSync(join(out, 'metrics.jsonl'))
          ? readFileSync(join(out, 'metrics.jsonl'), 'utf8')
              .split('\n')
              .filter((l) => l.includes('"kind":"train"') && l.includes('"stage":"mix"')).length
          : 0;
      const poll = setInterval(() => mixSteps() >= 1 && stop.abort(), 20);
      const first = await distributedTrainer({ url, runId: 'resumed', outDir: out, signal: stop.signal }).finally(() =>
        clearInterval(poll),
      );
      assert.equal(first.done, false, 'stopped');
      assert.ok(first.step >= 3 && first.step < 6, `stopped inside MIX at step ${first.step}`);
      assert.equal(existsSync(join(out, 'summary.json')), false, 'a stopped run writes no summary');
      const second = await distributedTrainer({ url, runId: 'resumed', outDir: out });
      assert.equal(second.done, true);
      assert.equal(second.startedFrom, first.step, 'resumed from the newest checkpoint');
      assert.equal(second.step, 6);
    } finally {
      stopEx.abort();
      await explorer;
    }
    const recs = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      recs.filter((x) => x.kind === 'train').map((x) => `${x.stage}@${x.step}`),
      ['warmup@0', 'warmup@1', 'mix@2', 'mix@3', 'mix@4', 'mix@5'],
      'every step trained once, in its stage',
    );
    assert.deepEqual(
      recs.filter((x) => x.kind === 'stage').map((x) => x.stage),
      ['warmup', 'mix'],
      'the resumed stage is not entered twice',
    );
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
      evals: { stage: string; step: number; accuracy: number }[];
      base_accuracy: number;
    };
    // This trainer evaluated the end only; the start and the warm-up were the first one's, and the summary
    // covers the whole run (issue 24 item 8: the run's records live in its database), each once.
    assert.deepEqual(
      summary.evals.map((e) => `${e.stage}@${e.step}`),
      ['start@0', 'warmup@2', 'final@6'],
    );
    assert.deepEqual(
      recs.filter((x) => x.kind === 'eval').map((x) => `${x.stage}@${x.step}`),
      ['start@0', 'warmup@2', 'final@6'],
      'no evaluation run twice',
    );
    assert.equal(
      summary.base_accuracy,
      recs.find((x) => x.kind === 'eval' && x.stage === 'warmup')!.accuracy,
      'base_accuracy: the warm-up result, kept in the run',
    );
    const store = await openStore(url);
    try {
      for (let step = 0; step < 6; step++)
        assert.ok((await store.consumed('trainer', step, 'resumed')).length > 0, `step ${step} recorded`);
      const usual = await store.list({ runId: 'resumed', source: 'usual', limit: 10_000 });
      assert.equal(usual.filter((e) => e.useCount > 1).length, 0, 'no rollout trained twice');
    } finally {
      await store.close();
    }
  } finally {
    pg.stop();
  }
});

// A taskset file under 20 tasks and no eval: each placement trains on every task, evaluates nothing,
// and its summary (and report) says so with null accuracies instead of an accuracy of nothing.
test('no eval set (a small taskset file without eval): memory, checkpoint and distributed run without held-out accuracy and say why', async (t) => {
  const small = join(dir, 'small.jsonl');
  writeFileSync(
    small,
    rows
      .slice(0, 10)
      .map((r) => JSON.stringify(r))
      .join('\n') + '\n',
  );
  const noEval = (method: 'memory' | 'checkpoint'): RunConfig => {
    const base = config(method);
    return {
      ...base,
      taskset: { ...base.taskset, path: small },
      eval: undefined,
      monitor: { ...base.monitor, eval_every: 1 },
      stages: [{ ...base.stages![0]!, steps: 2 }],
    };
  };
  const why =
    /^none: no eval given and the taskset has 8 task\(s\), under 20, so none is held out and no held-out accuracy is measured/;
  const check = (
    outDir: string,
    s: {
      base_accuracy: number | null;
      final_accuracy: number | null;
      evals: unknown[];
      eval_set: string;
      report: string;
    },
    what: string,
  ) => {
    assert.deepEqual([s.base_accuracy, s.final_accuracy, s.evals], [null, null, []], what);
    assert.match(s.eval_set, why, what);
    assert.equal(
      readFileSync(join(outDir, 'metrics.jsonl'), 'utf8').includes('"kind":"eval"'),
      false,
      `${what}: no eval record`,
    );
    const html = readFileSync(s.report, 'utf8');
    assert.match(html, /<th>base_accuracy<\/th><td>none \(no eval set\)<\/td>/, `${what}: report`);
    assert.match(html, /<th>eval_set<\/th><td>none: no eval given/, `${what}: report`);
  };
  for (const method of ['memory', 'checkpoint'] as const) {
    const s = await runJob({
      config: noEval(method),
      workspace: mkdtempSync(join(dir, `ws-noeval-${method}-`)),
      runId: `noeval-${method}`,
    });
    assert.equal(s.trainer_steps, 2, method);
    check(s.run_dir, s, method);
  }
  const pg = startPg();
  if ('skip' in pg) return t.skip(pg.skip);
  try {
    const url = pgSchemaUrl(pg.url);
    await createDistributedRun(noEval('checkpoint'), url, 'noeval', join(dir, 'weights-noeval'));
    const stop = new AbortController();
    const explorer = distributedExplorer({ url, runId: 'noeval', signal: stop.signal, leaseMs: 20_000 });
    let r;
    try {
      r = await distributedTrainer({ url, runId: 'noeval', outDir: join(dir, 'noeval-out') });
      assert.equal(r.done, true);
    } finally {
      stop.abort();
      await explorer;
    }
    check(r.outDir, JSON.parse(readFileSync(join(r.outDir, 'summary.json'), 'utf8')), 'distributed');
  } finally {
    pg.stop();
  }
});
