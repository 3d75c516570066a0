import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTaskset, formatTaskError } from '../../backend/buffer/taskset/load.js';
import { parseCsv } from '../../backend/core/taskset-text/csv.js';
import { mixedTaskset } from './taskset-helpers.js';

test('1,000 good + 37 bad JSONL lines: exactly 37 errors at the right lines, 1,000 tasks load', () => {
  const { text, bad } = mixedTaskset(1000, 37);
  assert.equal(bad.length, 37);
  assert.equal(new Set(bad.map((b) => b.kind)).size, 5, 'all five kinds of bad record');
  const r = parseTaskset(text, 'mixed.jsonl');
  assert.equal(r.tasks.length, 1000);
  assert.equal(r.records, 1037);
  assert.deepEqual(
    r.errors.map((e) => [e.line, e.field]),
    bad.map((b) => [b.line, b.field]),
  );
  for (const [k, b] of bad.entries()) {
    const e = r.errors[k]!;
    assert.equal(e.file, 'mixed.jsonl');
    const expect = {
      bad_json: /bad JSON/,
      missing_field: /missing/,
      wrong_type: /expected string, got array/,
      empty_prompt: /prompt is empty/,
      duplicate_id: new RegExp(`first at line ${b.firstLine}\\b`),
    }[b.kind];
    assert.match(e.message, expect, `${b.kind} at line ${b.line}: ${e.message}`);
  }
  // Valid records stay in file order with their lines, answers normalised to strings.
  assert.deepEqual(
    r.tasks.slice(0, 3).map((t) => t.id),
    ['t0', 't1', 't2'],
  );
  assert.ok(r.tasks.every((t) => typeof t.answer === 'string' && t.domain === 'math'));
  assert.equal(r.tasks[1]!.answer, '2');
  assert.equal(formatTaskError(r.errors[0]!), `mixed.jsonl:${bad[0]!.line}: field '(record)': ${r.errors[0]!.message}`);
});

test('minimal record is a math task; extra fields go to metadata; number ids and answers become strings', () => {
  const r = parseTaskset(
    '{"id": 7, "prompt": "1+1?", "answer": 2, "source": "gsm8k", "metadata": {"split": "a"}}\n',
    't.jsonl',
  );
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.tasks[0], {
    id: '7',
    taskset: 't.jsonl',
    domain: 'math',
    prompt: '1+1?',
    answer: '2',
    metadata: { split: 'a', source: 'gsm8k' },
  });
});

test('domain schemas: code, k12 choices, vision, multiturn, text; domain from field, option, else math', () => {
  const recs = [
    { id: 'c1', domain: 'code', prompt: 'write add', entry_point: 'add', tests: [{ args: [1, 2], expected: 3 }] },
    { id: 'c2', domain: 'code', prompt: 'write add', entryPoint: 'add', tests: [{ args: [1, 2] }] },
    { id: 'k1', domain: 'k12', prompt: 'Capital of France?', choices: ['Rome', 'Paris'], answer: 'Paris' },
    { id: 'k2', domain: 'k12', prompt: 'Q', choices: ['a', 'b'], answer: 'c' },
    { id: 'k3', domain: 'k12', prompt: 'Q', choices: ['a', 'b'], answer: 'b' },
    { id: 'v1', domain: 'vision', prompt: 'colour?', answer: 'red', image: { width: 1, height: 1, rgb: [255, 0, 0] } },
    { id: 'v2', domain: 'vision', prompt: 'colour?', answer: 'red', image: { width: 2, height: 1, rgb: [255, 0, 0] } },
    { id: 'm1', domain: 'multiturn', environment: 'maze' },
    { id: 'm2', domain: 'multiturn' },
    { id: 'x1', domain: 'text', prompt: 'say hi' },
    { id: 'x2', domain: 'chemistry', prompt: 'p' },
  ];
  const r = parseTaskset(recs.map((x) => JSON.stringify(x)).join('\n'), 'd.jsonl');
  assert.deepEqual(
    r.tasks.map((t) => t.id),
    ['c1', 'k1', 'k3', 'v1', 'm1', 'x1'],
  );
  assert.equal(r.tasks[0]!.entryPoint, 'add');
  assert.equal(r.tasks[1]!.answer, 'B', 'choice text becomes its letter');
  assert.equal(r.tasks[4]!.metadata?.environment, 'maze');
  const errs = Object.fromEntries(r.errors.map((e) => [e.line, `${e.field}: ${e.message}`]));
  assert.match(errs[2]!, /^tests\[0\]\.expected: required field is missing/);
  assert.match(errs[4]!, /^answer: expected a letter A-B or one of the choices, got 'c'/);
  assert.match(errs[7]!, /^image\.rgb: expected 6 values/);
  assert.match(errs[9]!, /^metadata\.environment: .*environment name/);
  assert.match(errs[11]!, /^domain: expected one of math, code/);
  // Domain from the load option when the record has none.
  const t = parseTaskset('{"id":"a","prompt":"hi"}', 'x.jsonl', { domain: 'text' });
  assert.equal(t.tasks[0]!.domain, 'text');
  assert.equal(parseTaskset('{"id":"a","prompt":"hi"}', 'x.jsonl').errors[0]!.field, 'answer');
});

test('JSON array: element start lines, a broken element spoils only itself, `tasks` key accepted', () => {
  const text = [
    '[',
    '  {"id": "a", "prompt": "p1",',
    '   "answer": "1"},',
    '  {"id": "b", "prompt": "has } and { and \\" in it", "answer": "2"},',
    '  {"id": "c", "prompt": , "answer": "3"},',
    '  {"id": "d",',
    '   "prompt": "p4"},',
    '  {"id": "e", "prompt": "p5", "answer": 5}',
    ']',
  ].join('\n');
  const r = parseTaskset(text, 'a.json');
  assert.deepEqual(
    r.tasks.map((t) => t.id),
    ['a', 'b', 'e'],
  );
  assert.deepEqual(
    r.errors.map((e) => [e.line, e.field]),
    [
      [5, '(record)'],
      [6, 'answer'],
    ],
  );
  const wrapped = parseTaskset(
    '{"name": "x", "tasks": [\n{"id":"a","prompt":"p","answer":"1"},\n\n{"id":"b","prompt":"","answer":"1"}]}',
    'w.json',
  );
  assert.deepEqual(
    wrapped.tasks.map((t) => t.id),
    ['a'],
  );
  assert.deepEqual(
    wrapped.errors.map((e) => [e.line, e.field]),
    [[4, 'prompt']],
  );
  const truncated = parseTaskset('[{"id":"a","prompt":"p","answer":"1"},\n{"id":"b"', 't.json');
  assert.deepEqual(
    truncated.tasks.map((t) => t.id),
    ['a'],
  );
  assert.ok(truncated.errors.some((e) => e.line === 2 && /end of file/.test(e.message)));
  assert.match(parseTaskset('"x"', 's.json').errors[0]!.message, /array of records/);
  const trailing = parseTaskset('[{"id":"a","prompt":"p","answer":"1"}]\n oops', 'g.json');
  assert.equal(trailing.tasks.length, 1);
  assert.deepEqual(
    trailing.errors.map((e) => [e.line, e.field]),
    [[2, '(file)']],
  );
});

test('YAML list: item lines from the CST, syntax errors located, other items kept', () => {
  const text = [
    '- id: a',
    '  prompt: p1',
    '  answer: 1',
    '- id: b',
    '  prompt: ""',
    '  answer: 2',
    '- id: c',
    '  prompt: [unclosed',
    '  answer: 3',
    '- id: d',
    '  prompt: |',
    '    multi',
    '    line',
    '  answer: four',
  ].join('\n');
  const r = parseTaskset(text, 't.yaml');
  assert.deepEqual(
    r.tasks.map((t) => t.id),
    ['a', 'd'],
  );
  assert.equal(r.tasks[1]!.prompt, 'multi\nline\n');
  assert.equal(r.errors[0]!.line, 4);
  assert.equal(r.errors[0]!.field, 'prompt');
  assert.ok(
    r.errors.some((e) => e.line >= 7 && e.line <= 9 && /bad YAML/.test(e.message)),
    JSON.stringify(r.errors),
  );
  // Several syntax errors inside one item are one error, at the item.
  const two = parseTaskset(
    '- {id: a, prompt: p, answer: 1}\n- id: b\n  prompt: x\n   answer: 2\n- {id: c, prompt: p, answer: 1}\n',
    'u.yaml',
  );
  assert.deepEqual(
    two.tasks.map((t) => t.id),
    ['a', 'c'],
  );
  assert.deepEqual(
    two.errors.map((e) => [e.line, e.field]),
    [[2, '(record)']],
  );
  assert.match(two.errors[0]!.message, /\(line 3, column 11\)/);
  const m = parseTaskset('tasks:\n  - {id: x, prompt: p, answer: 1}\n  - {id: x, prompt: q, answer: 2}\n', 'm.yml');
  assert.deepEqual(
    m.errors.map((e) => [e.line, e.field, e.message]),
    [[3, 'id', "duplicate id 'x' (first at line 2)"]],
  );
});

test('CSV: RFC 4180 quoting (commas, quotes, newlines), row lines, JSON cells', () => {
  assert.deepEqual(parseCsv('a,b\r\n"x, ""y""","1\n2"\n\nz,\n'), [
    { line: 1, cells: ['a', 'b'] },
    { line: 2, cells: ['x, "y"', '1\n2'] },
    { line: 5, cells: ['z', ''] },
  ]);
  assert.deepEqual(parseCsv('a,b\nx,"open\ny\n'), [
    { line: 1, cells: ['a', 'b'] },
    { line: 2, cells: ['x', 'open\ny\n'], error: 'unterminated quoted cell' },
  ]);
  const text = [
    'id,prompt,answer,choices,domain,source',
    'a,"What is 1,000 + 1?",1001,,,web',
    'b,"Pick ""one""',
    'of these",A,"[""x"",""y""]",k12,',
    'c,,3,,,',
    'd,p,1,[broken,,',
    'e,p',
    'f,"p",1,,,',
  ].join('\n');
  const r = parseTaskset(text, 't.csv');
  assert.deepEqual(
    r.tasks.map((t) => t.id),
    ['a', 'b', 'f'],
  );
  assert.equal(r.tasks[0]!.prompt, 'What is 1,000 + 1?');
  assert.deepEqual(r.tasks[0]!.metadata, { source: 'web' });
  assert.deepEqual(r.tasks[1]!.choices, ['x', 'y']);
  assert.equal(r.tasks[1]!.prompt, 'Pick "one"\nof these');
  assert.deepEqual(
    r.errors.map((e) => [e.line, e.field]),
    [
      [5, 'prompt'],
      [6, 'choices'],
      [7, '(row)'],
    ],
  );
});

test("a user's own column named like a schema field (difficulty: 'easy') is kept in metadata, not 40 errors (issue 40 item 1)", () => {
  const rows = Array.from({ length: 40 }, (_, i) =>
    JSON.stringify({
      key: `k${i}`,
      input: `What is ${i} plus ${i}?`,
      label: String(2 * i),
      difficulty: ['easy', 'hard'][i % 2],
    }),
  );
  const fields = { prompt_key: 'input', response_key: 'label', id_key: 'key' };
  const r = parseTaskset(rows.join('\n'), 'mine.jsonl', { fields, defaultIds: true });
  assert.deepEqual(r.errors, []);
  assert.equal(r.tasks.length, 40);
  assert.deepEqual(r.tasks[1], {
    id: 'k1',
    taskset: 'mine.jsonl',
    domain: 'math',
    prompt: 'What is 1 plus 1?',
    answer: '2',
    metadata: { difficulty: 'hard' },
  });
  assert.ok(r.tasks.every((t) => t.difficulty === undefined));
  // One warning for the column, at its first line, saying what the field is and the way out.
  assert.equal(r.warnings?.length, 1);
  assert.equal(r.warnings![0]!.line, 1);
  assert.equal(r.warnings![0]!.field, 'difficulty');
  assert.match(
    r.warnings![0]!.message,
    /^holds "easy", not the task difficulty \(a number from 0, easy, to 1, hard\): kept as your own column, in each task's metadata \(40 records\)/,
  );
  assert.match(r.warnings![0]!.message, /Rename the column/);

  // The same without a mapping (the schema's own names), and for a domain column of the user's.
  const own = parseTaskset(
    '{"id":"a","prompt":"1+1?","answer":"2","difficulty":"easy","domain":"algebra"}\n{"id":"b","prompt":"2+2?","answer":"4","difficulty":"hard","domain":"geometry"}\n',
    'own.jsonl',
  );
  assert.deepEqual(own.errors, []);
  assert.deepEqual(own.tasks[1]!.metadata, { difficulty: 'hard', domain: 'geometry' });
  assert.equal(own.tasks[1]!.domain, 'math');
  assert.deepEqual(
    own.warnings!.map((w) => [w.line, w.field]),
    [
      [1, 'difficulty'],
      [1, 'domain'],
    ],
  );

  // A column where some values fit is the field: the others are errors at their lines, explained.
  const typo = parseTaskset(
    '{"id":"a","prompt":"1+1?","answer":"2","difficulty":0.2}\n{"id":"b","prompt":"2+2?","answer":"4","difficulty":"0.4"}\n',
    'typo.jsonl',
  );
  assert.equal(typo.tasks[0]!.difficulty, 0.2);
  assert.equal(typo.warnings, undefined);
  assert.deepEqual(
    typo.errors.map((e) => [e.line, e.field]),
    [[2, 'difficulty']],
  );
  assert.match(
    typo.errors[0]!.message,
    /^expected number, got string \('difficulty' is read as the task difficulty .*rename it: a quick fix does\)$/,
  );
});

test('JSON array (jsonc-parser): each syntax error named at its record line and column, the records around it kept', () => {
  const ok = (id: string) => JSON.stringify({ id, prompt: `p ${id}`, answer: '1' });
  const text = [
    '[',
    `  ${ok('a')},`,
    '  {"id": "b", "prompt": tru, "answer": "1"},',
    `  ${ok('c')},,`,
    `  ${ok('d')}`,
    ']',
  ].join('\n');
  const r = parseTaskset(text, 'j.json');
  assert.deepEqual(
    r.tasks.map((t) => t.id),
    ['a', 'c', 'd'],
  );
  assert.deepEqual(r.errors.map(formatTaskError), [
    "j.json:3: field '(record)': bad JSON: invalid symbol at line 3, column 25",
    "j.json:4: field '(record)': bad JSON: value expected at column 42 (an empty element: a stray comma?)",
  ]);
  const cut = parseTaskset(`[\n${ok('a')},\n${ok('b').slice(0, 20)}`, 'cut.json');
  assert.deepEqual(
    cut.tasks.map((t) => t.id),
    ['a'],
  );
  assert.deepEqual(cut.errors.map(formatTaskError), [
    "cut.json:3: field '(record)': bad JSON: unexpected end of string at line 3, column 20",
  ]);
});
