// Run setup (coordinator/setup/): the user's files as taskset / eval / experts with their own field names,
// bad records skipped with FILE:LINE, paths relative to the config file, rewards from the workflow
// or the task, GSM8K answers, the sampler from the algorithm bundle, the selector and the task pipeline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import type { Task } from '../../backend/core/types.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { resolveConfigPaths } from '../../backend/coordinator/setup/config-paths.js';
import { loadTasks, TaskFeed, withoutHeldOut } from '../../backend/coordinator/setup/tasks.js';
import { samplerConfig } from '../../backend/coordinator/setup/trainer.js';
import { parseTaskset } from '../../backend/buffer/taskset/index.js';

function cfgOf(raw: Record<string, unknown>): RunConfig {
  const { config, issues } = validateRunConfig({ workflow: { name: 'single_turn', reward: 'exact_match' }, ...raw });
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}

async function withDir<T>(f: (dir: string) => T | Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'rft-setup-'));
  try {
    return await f(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const jsonl = (rows: unknown[]) => rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n';

test('files with foreign field names: format maps them, bad records are skipped with FILE:LINE: field', () =>
  withDir(async (dir) => {
    writeFileSync(
      join(dir, 'train.jsonl'),
      jsonl([
        { qid: 'a', question: 'upper: ab', solution: 'AB' },
        { qid: 'b', question: 'upper: cd' }, // no solution: line 2, field 'solution'
        '{not json', // line 3
        { qid: 'c', question: 'upper: ef', solution: 'EF' },
      ]),
    );
    writeFileSync(
      join(dir, 'experts.jsonl'),
      jsonl([{ question: 'upper: gh', demo: 'GH' }, { question: 'upper: ij' }]),
    );
    writeFileSync(join(dir, 'eval.csv'), 'q,target\nupper: kl,KL\nupper: mn,MN\n');
    const cfg = resolveConfigPaths(
      cfgOf({
        taskset: { path: 'train.jsonl', format: { id_key: 'qid', prompt_key: 'question', response_key: 'solution' } },
        eval: { path: 'eval.csv', format: { prompt_key: 'q', response_key: 'target' } },
        experts: { path: 'experts.jsonl', format: { prompt_key: 'question', response_key: 'demo' } },
      }),
      join(dir, 'config.yaml'),
    );
    const pools = await loadTasks(cfg);
    assert.deepEqual(
      pools.train.map((t) => [t.id, t.prompt, t.answer]),
      [
        ['a', 'upper: ab', 'AB'],
        ['c', 'upper: ef', 'EF'],
      ],
    );
    assert.deepEqual(
      pools.eval.map((t) => [t.id, t.prompt, t.answer]),
      [
        ['L2', 'upper: kl', 'KL'],
        ['L3', 'upper: mn', 'MN'],
      ],
    );
    assert.equal(pools.experts.length, 1);
    assert.equal(pools.solve(pools.experts[0]!), 'GH', 'the demonstration is the expert response');
    assert.equal(pools.solve(pools.train[0]!), 'AB');

    // The same errors, as the loader reports them: the user's own field names.
    const r = parseTaskset(
      jsonl([
        { qid: 'b', question: 'upper: cd' },
        { qid: 'x', solution: 'X' },
      ]),
      'f.jsonl',
      { fields: { id_key: 'qid', prompt_key: 'question', response_key: 'solution' } },
    );
    assert.deepEqual(
      r.errors.map((e) => [e.line, e.field]),
      [
        [1, 'solution'],
        [2, 'question'],
      ],
    );
    const ex = parseTaskset(jsonl([{ prompt: 'q' }]), 'e.jsonl', {
      role: 'expert',
      fields: { response_key: 'demo' },
      defaultIds: true,
    });
    assert.deepEqual(
      ex.errors.map((e) => [e.line, e.field]),
      [[1, 'demo']],
    );
  }));

test('paths are relative to the config file (loadRunConfig), and a missing file names its field', () =>
  withDir(async (dir) => {
    mkdirSync(join(dir, 'data'));
    writeFileSync(join(dir, 'data', 't.jsonl'), jsonl([{ id: '1', prompt: 'p', answer: 'a' }]));
    writeFileSync(
      join(dir, 'run.yaml'),
      stringify({
        taskset: { path: 'data/t.jsonl' },
        eval: { path: 'data/t.jsonl' },
        workflow: { reward: 'exact_match' },
      }),
    );
    const cfg = loadRunConfig(join(dir, 'run.yaml'));
    assert.equal(cfg.taskset.path, join(dir, 'data', 't.jsonl'));
    assert.equal((await loadTasks(cfg)).train.length, 1);
    const missing = resolveConfigPaths(
      cfgOf({ taskset: { path: 'nope.jsonl' }, eval: { builtin: 'reverse', size: 2 } }),
      join(dir, 'run.yaml'),
    );
    await assert.rejects(() => loadTasks(missing), /taskset file .*nope\.jsonl/);
    // A file taskset without an eval set and under 20 tasks runs without one, and says so.
    const none = await loadTasks(cfgOf({ taskset: { path: join(dir, 'data', 't.jsonl') } }));
    assert.deepEqual([none.train.length, none.eval.length, none.heldOut], [1, 0, undefined]);
    assert.match(
      none.evalSet,
      /^none: no eval given and the taskset has 1 task\(s\), under 20, .*no held-out accuracy/,
    );
    // eval.holdout asks for a share anyway: one task is too few, refused at the field.
    await assert.rejects(
      () => loadTasks(cfgOf({ taskset: { path: join(dir, 'data', 't.jsonl') }, eval: { holdout: 0.5 } })),
      /eval\.holdout: 1 task\(s\) in the taskset are too few/,
    );
  }));

test('eval optional: a taskset file without eval holds out 10% by seed 0, eval.holdout sets the share; never trained on, stable in any file order', () =>
  withDir(async (dir) => {
    const rows = Array.from({ length: 50 }, (_, i) => ({ id: `t${i}`, prompt: `question ${i}`, answer: String(i) }));
    // A duplicated prompt under another id: it must land on one side only.
    rows.push({ id: 'dup', prompt: 'question 7', answer: '7' });
    const f = join(dir, 't.jsonl');
    writeFileSync(f, jsonl(rows));
    const p = await loadTasks(cfgOf({ taskset: { path: f } }));
    assert.equal(p.eval.length + p.train.length, 51);
    assert.ok(p.eval.length >= 5 && p.eval.length <= 6, `${p.eval.length} held out`);
    const evalPrompts = new Set(p.eval.map((t) => t.prompt));
    assert.equal(p.train.filter((t) => evalPrompts.has(t.prompt)).length, 0, 'no held-out prompt in training');
    assert.equal(p.heldOut, true);
    assert.equal(
      p.evalSet,
      `10% of the taskset held out by seed 0: ${p.eval.length} of 51 tasks (no eval given: the default for a taskset file of 20 tasks or more)`,
    );
    // The same pick from the file in reverse order; another seed picks other tasks.
    const rev = join(dir, 'rev.jsonl');
    writeFileSync(rev, jsonl([...rows].reverse()));
    assert.deepEqual(
      (await loadTasks(cfgOf({ taskset: { path: rev } }))).eval.map((t) => t.id).sort(),
      p.eval.map((t) => t.id).sort(),
    );
    const other = await loadTasks(cfgOf({ taskset: { path: f }, eval: { holdout: 0.1, seed: 3 } }));
    assert.notDeepEqual(other.eval.map((t) => t.id).sort(), p.eval.map((t) => t.id).sort());
    const quarter = await loadTasks(cfgOf({ taskset: { path: f }, eval: { holdout: 0.25 } }));
    assert.ok(quarter.eval.length >= 12 && quarter.eval.length <= 14, `${quarter.eval.length} held out`);
    assert.match(quarter.evalSet, /^25% of the taskset held out by seed 0: 1[234] of 51 tasks \(eval\.holdout\)$/);
    // A saved (live) taskset keeps the held-out tasks out of training.
    assert.deepEqual(
      withoutHeldOut(p, p.eval.concat(p.train)).map((t) => t.id),
      p.train.map((t) => t.id),
    );
    // Explicit config wins: an eval file is used as it is, nothing held out.
    const withFile = await loadTasks(cfgOf({ taskset: { path: f }, eval: { path: f } }));
    assert.equal(withFile.train.length, 51);
    assert.equal(withFile.heldOut, undefined);
  }));

test('eval.holdout: refused with path / builtin / format beside it or outside (0, 1), at its path', () => {
  const at = (raw: Record<string, unknown>) =>
    validateRunConfig({ taskset: { path: 't.jsonl' }, workflow: { reward: 'exact_match' }, ...raw }).issues.map(
      (i) => `${i.path}: ${i.message}`,
    );
  assert.deepEqual(at({ eval: { holdout: 0.2 } }), []);
  assert.ok(
    at({ eval: { holdout: 0.2, path: 'e.jsonl' } }).some((m) =>
      /^eval: give exactly one of builtin, path or holdout/.test(m),
    ),
  );
  assert.ok(at({ eval: { holdout: 1 } }).some((m) => m.startsWith('eval.holdout')));
  assert.ok(at({ eval: { holdout: 0 } }).some((m) => m.startsWith('eval.holdout')));
  assert.ok(at({ eval: { holdout: 0.1, format: { prompt_key: 'q' } } }).some((m) => m.startsWith('eval.format')));
  // Generator fields beside a share are read by nothing (the schema refuses them); its seed is read (which tasks).
  assert.deepEqual(
    at({ eval: { holdout: 0.1, size: 50, seed: 4 } }).map((m) => m.split(':')[0]),
    ['eval.size'],
  );
  // holdout on the taskset itself is not a field.
  assert.ok(at({ taskset: { path: 't.jsonl', holdout: 0.1 } }).some((m) => m.startsWith('taskset')));
});

test('format and domain are for files: with a built-in they are refused at their path', () => {
  const { issues } = validateRunConfig({
    taskset: { builtin: 'reverse', format: { prompt_key: 'q' } },
    workflow: { reward: 'exact_match' },
  });
  assert.ok(
    issues.some((i) => i.path === 'taskset.format'),
    JSON.stringify(issues),
  );
  const unknown = validateRunConfig({
    taskset: { path: 'x.jsonl', format: { prompt_kee: 'q' } },
    workflow: { reward: 'exact_match' },
  });
  assert.ok(
    unknown.issues.some((i) => i.path.startsWith('taskset.format')),
    JSON.stringify(unknown.issues),
  );
});

test("the reward: a task's own field wins, else workflow.reward; with neither the task is skipped", async () =>
  withDir(async (dir) => {
    const f = join(dir, 't.jsonl');
    writeFileSync(
      f,
      jsonl([
        { id: 'own', prompt: 'p', answer: '7', reward: 'math_answer' },
        { id: 'none', prompt: 'p', answer: 'x' },
        { id: 'bad', prompt: 'p', answer: 'x', reward: 'no_such' },
      ]),
    );
    const noDefault = cfgOf({ taskset: { path: f }, eval: { path: f }, workflow: { name: 'single_turn' } });
    const pools = await loadTasks(noDefault);
    assert.deepEqual(
      pools.train.map((t) => t.id),
      ['own'],
    );
    const r = await pools.reward(pools.train[0]!, '<answer>7</answer>');
    assert.equal(r.reward, 1, 'math_answer: right number in the tag');
    // With a default, the task without its own reward uses workflow.reward (exact_match).
    const withDefault = await loadTasks(cfgOf({ taskset: { path: f }, eval: { path: f } }));
    assert.deepEqual(
      withDefault.train.map((t) => t.id),
      ['own', 'none'],
    );
    assert.equal((await withDefault.reward(withDefault.train[1]!, 'x')).reward, 1);
    assert.equal(
      (await withDefault.reward(withDefault.train[0]!, 'Answer: 7')).reward,
      0.9,
      "math_answer (the task's own), not exact_match",
    );
    // A built-in taskset has no reward of its own.
    await assert.rejects(
      () => loadTasks(cfgOf({ taskset: { builtin: 'reverse', size: 4 }, workflow: { name: 'single_turn' } })),
      /workflow\.reward: required/,
    );
  }));

test('GSM8K answers: the reference is the number after ####, and a `#### 42` response scores with math_answer', async () =>
  withDir(async (dir) => {
    const f = join(dir, 'gsm.jsonl');
    writeFileSync(
      f,
      jsonl([
        {
          question: 'Tom has 40 apples and buys 2. How many?',
          answer: 'He has 40 + 2 = <<40+2=42>>42 apples.\n#### 42',
        },
      ]),
    );
    const format = { prompt_key: 'question', response_key: 'answer' };
    const cfg = cfgOf({
      taskset: { path: f, format },
      eval: { path: f, format },
      workflow: { name: 'single_turn', reward: 'math_answer' },
    });
    const pools = await loadTasks(cfg);
    const t = pools.train[0]!;
    assert.equal(t.answer, '42');
    assert.match(String(t.metadata?.solution), /<<40\+2=42>>/);
    assert.equal((await pools.reward(t, 'So 40 + 2 = 42.\n#### 42')).reward, 0.9, 'correct, no <answer> format credit');
    assert.equal((await pools.reward(t, '#### 41')).reward, 0);
    // A task whose raw answer still holds the solution (loaded without the mapping) is scored the same way.
    const raw: Task = { id: 'r', taskset: 'x', domain: 'math', prompt: 'q', answer: 'steps\n#### 42' };
    assert.equal((await pools.reward(raw, '<answer>42</answer>')).reward, 1);
  }));

test("the sampler's expert share comes from the algorithm bundle (sampling.expertRatio), params override it", () => {
  const cfg = cfgOf({ taskset: { builtin: 'reverse' } });
  assert.equal(samplerConfig('sft', {}, cfg).type, 'expert');
  assert.deepEqual([samplerConfig('mix', {}, cfg).type, samplerConfig('mix', {}, cfg).expertRatio], ['mixed', 0.5]);
  assert.equal(samplerConfig('chord', {}, cfg).type, 'mixed');
  assert.equal(samplerConfig('grpo', {}, cfg).type, 'fifo');
  assert.deepEqual(
    [
      samplerConfig('grpo', { expert_ratio: 0.25 }, cfg).type,
      samplerConfig('grpo', { expert_ratio: 0.25 }, cfg).expertRatio,
    ],
    ['mixed', 0.25],
  );
  // DPO reads stored preference pairs (chosen, rejected of one prompt).
  assert.equal(samplerConfig('dpo', {}, cfg).type, 'pairs');
});

test('the task feed is the configured selector over the pipelined tasks, and learns from outcomes', () =>
  withDir(async (dir) => {
    const f = join(dir, 't.jsonl');
    writeFileSync(
      f,
      jsonl(
        [1, 2, 3, 4, 5]
          .map((i) => ({ id: `t${i}`, prompt: i === 3 ? 'same' : `p${i}`, answer: 'a' }))
          .concat([{ id: 't6', prompt: 'same', answer: 'a' }]),
      ),
    );
    const seq = cfgOf({
      taskset: { path: f, selector: 'sequential', pipeline: [{ name: 'dedupe' }] },
      eval: { path: f },
    });
    const pools = await loadTasks(seq);
    assert.deepEqual(
      pools.train.map((t) => t.id),
      ['t1', 't2', 't3', 't4', 't5'],
      'dedupe dropped the second "same" prompt',
    );
    const feed = new TaskFeed(seq, pools.train);
    assert.deepEqual(
      feed.next(7).map((t) => t.id),
      ['t1', 't2', 't3', 't4', 't5', 't1', 't2'],
    );
    const restored = new TaskFeed(seq, pools.train);
    restored.restore(feed.state());
    assert.deepEqual(
      restored.next(1).map((t) => t.id),
      ['t3'],
      'a restored feed continues where the other stopped',
    );

    // t1..t4 always solved, t5 never: priority (max(floor, 1 - success rate)) picks t5 far more often.
    const exp = (taskId: string, reward: number) => ({ taskId, reward, source: 'usual', status: 'ok' }) as never;
    const draws = (raw: Record<string, unknown>) => {
      const prio = new TaskFeed(
        cfgOf({ taskset: { path: f, selector: 'priority', ...raw }, eval: { path: f } }),
        pools.train,
      );
      prio.observe(
        ['t1', 't2', 't3', 't4'].flatMap((id) => [exp(id, 1), exp(id, 1)]).concat([exp('t5', 0), exp('t5', 0)]),
      );
      const counts = new Map<string, number>();
      for (let i = 0; i < 400; i++) for (const t of prio.next(1)) counts.set(t.id, (counts.get(t.id) ?? 0) + 1);
      return {
        unsolved: counts.get('t5') ?? 0,
        solved: 400 - (counts.get('t5') ?? 0),
        counts: JSON.stringify([...counts]),
      };
    };
    // taskset.priority_floor (every placement's selector is this feed's): 0 never revisits a solved task.
    assert.equal(draws({ priority_floor: 0 }).solved, 0);
    // The default floor 0.1: the four solved tasks together come back about 4 x 0.1 / 1.4 of the time.
    const d = draws({});
    assert.ok(d.solved >= 50 && d.solved <= 180 && d.unsolved > d.solved, `solved tasks still come back: ${d.counts}`);
    // A floor of 1 weighs every task alike.
    assert.ok(draws({ priority_floor: 1 }).solved > 250, draws({ priority_floor: 1 }).counts);
    assert.throws(
      () => new TaskFeed(cfgOf({ taskset: { path: f, selector: 'nope' }, eval: { path: f } }), pools.train),
      /taskset\.selector/,
    );
  }));

test('rft eval CHECKPOINT --config RUN.yaml of a config without an eval set says so at field eval (no accuracy of nothing)', () =>
  withDir(async (dir) => {
    writeFileSync(
      join(dir, 't.jsonl'),
      jsonl([
        { id: '1', prompt: 'p', answer: 'a' },
        { id: '2', prompt: 'q', answer: 'b' },
      ]),
    );
    writeFileSync(
      join(dir, 'run.yaml'),
      stringify({ taskset: { path: 't.jsonl' }, workflow: { reward: 'exact_match' } }),
    );
    const { parseFor } = await import('../../backend/cli/command.js');
    const { evalCommand: c } = await import('../../backend/cli/commands/eval.js');
    const err: string[] = [];
    const orig = console.error;
    console.error = (...xs: unknown[]) => void err.push(xs.join(' '));
    try {
      assert.equal(await c.run(parseFor(c, [join(dir, 'ck'), '--config', join(dir, 'run.yaml')])), 1);
    } finally {
      console.error = orig;
    }
    assert.match(
      err.join('\n'),
      /run\.yaml: field 'eval': the config has no eval set \(none: no eval given and the taskset has 2 task\(s\), under 20/,
    );
  }));
