import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import type { Task } from '../../backend/core/types.js';
import { PipelineConfigError, TaskPipeline, taskOperators } from '../../backend/buffer/pipeline/task/index.js';

const t = (id: string, prompt: string, extra: Partial<Task> = {}): Task => ({
  id,
  taskset: 'x',
  domain: 'math',
  prompt,
  answer: '1',
  ...extra,
});

function configError(cfg: unknown, deps = {}): string[] {
  try {
    TaskPipeline.fromConfig(cfg, deps);
  } catch (e) {
    assert.ok(e instanceof PipelineConfigError);
    return e.issues.map((i) => `${i.path}: ${i.message}`);
  }
  assert.fail('expected a config error');
}

test('config from YAML runs operators in order with per-step counts', () => {
  const cfg = parse(`
- name: dedupe
- name: length_filter
  max_chars: 20
- name: format_filter
  pattern: '\\d'
`);
  const p = TaskPipeline.fromConfig(cfg);
  const tasks = [
    t('a', 'What is 1+1?'),
    t('b', '  what IS   1+1? '),
    t('c', 'A very long prompt about 12345 things'),
    t('d', 'No digits here'),
    t('e', 'Add 2 and 3'),
  ];
  const r = p.run(tasks);
  assert.deepEqual(
    r.tasks.map((x) => x.id),
    ['a', 'e'],
  );
  assert.deepEqual(r.metrics, [
    { name: 'dedupe', in: 5, out: 4 },
    { name: 'length_filter', in: 4, out: 3 },
    { name: 'format_filter', in: 3, out: 2 },
  ]);
});

test('config errors name the path: unknown operator, bad parameter type, unknown parameter, bad regex, missing tokenizer', () => {
  assert.deepEqual(configError([{ name: 'dedupe' }, { name: 'dedup' }]), [
    `task_pipeline[1].name: unknown operator 'dedup'; known: ${taskOperators.names().join(', ')}`,
  ]);
  assert.deepEqual(configError([{ name: 'dedupe' }, { name: 'dedupe' }, { name: 'length_filter', max_chars: '400' }]), [
    'task_pipeline[2].max_chars: expected number, got string',
  ]);
  assert.deepEqual(configError([{ name: 'top_k', k: 3, kk: 1 }]), ['task_pipeline[0].kk: unknown parameter']);
  assert.deepEqual(configError([{ name: 'top_k' }]), ['task_pipeline[0].k: required parameter is missing']);
  assert.match(
    configError([{ name: 'format_filter', pattern: '(' }])[0]!,
    /^task_pipeline\[0\]\.pattern: bad regular expression/,
  );
  assert.match(
    configError([{ name: 'length_filter', max_tokens: 5 }])[0]!,
    /^task_pipeline\[0\]: length_filter: .*need a tokenizer/,
  );
  assert.deepEqual(configError({ name: 'dedupe' }), ['task_pipeline: expected a list of operators, got object']);
});

test('length_filter by tokens with an injected token counter', () => {
  const words = (s: string) => s.split(/\s+/).filter(Boolean).length;
  const p = TaskPipeline.fromConfig([{ name: 'length_filter', min_tokens: 2, max_tokens: 3 }], { countTokens: words });
  assert.deepEqual(
    p.run([t('a', 'one'), t('b', 'one two'), t('c', 'one two three four')]).tasks.map((x) => x.id),
    ['b'],
  );
});

test('format_filter: required fields and exclude', () => {
  const p = TaskPipeline.fromConfig([
    { name: 'format_filter', required_fields: ['answer', 'metadata.source'] },
    { name: 'format_filter', pattern: 'draft', flags: 'i', exclude: true },
  ]);
  const r = p.run([
    t('a', 'q', { metadata: { source: 's' } }),
    t('b', 'q'),
    t('c', 'DRAFT q', { metadata: { source: 's' } }),
  ]);
  assert.deepEqual(
    r.tasks.map((x) => x.id),
    ['a'],
  );
});

test('difficulty from pass rates, priority weights, top-k by priority', () => {
  const p = TaskPipeline.fromConfig([
    { name: 'difficulty', min_attempts: 2 },
    { name: 'priority_weights', min_weight: 0.05 },
    { name: 'top_k', k: 2 },
  ]);
  const passRates = new Map([
    ['a', { passes: 8, attempts: 8 }],
    ['b', { passes: 1, attempts: 4 }],
    ['c', { passes: 0, attempts: 1 }], // too few attempts: keeps its own difficulty
    ['d', { passes: 2, attempts: 4 }],
  ]);
  const r = p.run([t('a', 'qa'), t('b', 'qb'), t('c', 'qc', { difficulty: 0.1 }), t('d', 'qd')], { passRates });
  assert.deepEqual(
    r.tasks.map((x) => [x.id, x.difficulty, x.metadata?.priority]),
    [
      ['b', 0.75, 0.75],
      ['d', 0.5, 0.5],
    ],
  );
  assert.deepEqual(r.tasks[0]!.metadata, { passRate: 0.25, passes: 1, attempts: 4, priority: 0.75 });
  const all = TaskPipeline.fromConfig([
    { name: 'difficulty', min_attempts: 2 },
    { name: 'priority_weights', min_weight: 0.05 },
  ]).run([t('a', 'qa'), t('c', 'qc', { difficulty: 0.1 })], { passRates }).tasks;
  assert.equal(all[0]!.metadata?.priority, 0.05, 'solved task gets the minimum weight');
  assert.equal(all[1]!.difficulty, 0.1);
});
