// The mapping proposed for a user's own field names: from the names, and from the values where the
// names say nothing (issue 28: `final` -> answer, `worked` -> expert response, `problem` -> prompt).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeMapping, firstRecords, guessRole, proposeMapping } from '../../src/field-mapping.js';
import { suggestField } from '../../src/field-synonyms.js';

const math = [
  { id: 'm-1', problem: 'What is 17 + 25?', final: '42' },
  { id: 'm-2', problem: 'What is 9 * 8?', final: '72' },
];
const worked = [
  { problem: 'What is 17 + 25?', worked: '17 + 25: 7 + 5 = 12, carry 1; 1 + 2 + 1 = 4. So 42.' },
  { problem: 'What is 9 * 8?', worked: 'Nine eights are 72, since 10 * 8 = 80 and 80 - 8 = 72.' },
];

test('a math file {id, problem, final}: problem -> prompt, final -> answer, id as it is', () => {
  const p = proposeMapping(math, 'task');
  assert.deepEqual(p.format, { prompt_key: 'problem', response_key: 'final' });
  assert.deepEqual(p.fields, [
    { target: 'prompt', key: 'problem', why: 'name' },
    { target: 'answer', key: 'final', why: 'name' },
    { target: 'id', key: 'id', why: 'own' },
  ]);
  assert.equal(describeMapping(p.fields), 'problem -> prompt, final -> answer, id');
});

test('worked solutions {problem, worked}: an expert file; worked -> response', () => {
  assert.equal(guessRole('data/worked.jsonl', worked), 'expert');
  assert.equal(guessRole('mine/notes.jsonl', worked), 'expert', 'no short answer, long worked text: demonstrations');
  assert.equal(guessRole('mine/math.jsonl', math), 'task');
  assert.deepEqual(proposeMapping(worked, 'expert').format, { prompt_key: 'problem', response_key: 'worked' });
});

test('names that say nothing: the values decide (unique tokens -> id, long text -> prompt, short scalar -> answer)', () => {
  const recs = [
    { ref: 'a-1', body: 'Compute the sum of two and three, please.', out: '5' },
    { ref: 'a-2', body: 'Compute the product of four and six, please.', out: '24' },
    { ref: 'a-3', body: 'Compute seven minus two, and say only the number.', out: '5' },
  ];
  const p = proposeMapping(recs, 'task');
  assert.deepEqual(p.format, { prompt_key: 'body', response_key: 'out', id_key: 'ref' });
  assert.deepEqual(
    p.fields.map((f) => f.why),
    ['values', 'values', 'values'],
  );
  // An expert's response is the long text, never the short one.
  const e = proposeMapping(
    [
      {
        ask: 'Why is the sky blue on a clear day?',
        note: 'x',
        reply: 'Rayleigh scattering: short wavelengths scatter more, so blue light fills the sky.',
      },
    ],
    'expert',
  );
  assert.deepEqual(e.format, { prompt_key: 'ask', response_key: 'reply' });
  const e2 = proposeMapping(
    [
      {
        reply: 'Rayleigh scattering: short wavelengths scatter more, so blue light fills the sky.',
        ask: 'Why is the sky blue on a clear day?',
      },
    ],
    'expert',
  );
  assert.deepEqual(
    e2.format,
    { prompt_key: 'ask', response_key: 'reply' },
    'the longer text is the response, whatever the order',
  );
});

test('the schema names need no mapping; one field fills one target', () => {
  assert.equal(proposeMapping([{ id: 'a', prompt: 'p q r', answer: '1' }]).format, undefined);
  assert.deepEqual(proposeMapping([{ question: 'What is it?', answer: '1' }]).format, { prompt_key: 'question' });
});

test('did-you-mean knows final and worked', () => {
  assert.equal(suggestField('answer', { id: 'm-1', problem: 'x', final: '42' }), 'final');
  assert.equal(suggestField('response', { problem: 'x', worked: 'y' }), 'worked');
});

test('firstRecords: every format the backend reads (broken records skipped), at most max; other files none', () => {
  assert.deepEqual(firstRecords('{"a":1}\n{broken\n\n{"a":2}\n', 'x.jsonl'), [{ a: 1 }, { a: 2 }]);
  assert.deepEqual(firstRecords('[{"a":1},{"a":2},{"a":3}]', 'x.json', 2), [{ a: 1 }, { a: 2 }]);
  // A JSON array cut by the head read: the whole elements before the cut.
  assert.deepEqual(firstRecords('[{"a":1},{"a":2},{"a":', 'x.json'), [{ a: 1 }, { a: 2 }]);
  assert.deepEqual(firstRecords('a,b\n1,2\n"x, ""y""",3\n', 'x.csv'), [
    { a: '1', b: '2' },
    { a: 'x, "y"', b: '3' },
  ]);
  assert.deepEqual(firstRecords('- a: 1\n- a: 2\n', 'x.yml'), [{ a: 1 }, { a: 2 }]);
  assert.deepEqual(firstRecords('tasks:\n  - a: 1\n', 'x.yaml'), [{ a: 1 }]);
  assert.deepEqual(firstRecords('{"a":1}\n', 'x.txt'), []);
});

test('an experts file {input, reference_output}: recognised as experts by its shape, reference_output -> response (issue 40 item 3)', () => {
  const recs = [
    {
      input: 'Explain in one paragraph why the sum of two even numbers is always even, with an example.',
      reference_output: 'Each even number is 2k for some k, so the sum is 2(k + m), which is even.',
    },
    {
      input: 'Explain in one paragraph why the product of two odd numbers is always odd, with an example.',
      reference_output: 'Odd numbers are 2k + 1; the product 4km + 2k + 2m + 1 is odd, e.g. 3 * 5 = 15.',
    },
  ];
  assert.equal(guessRole('mine/reference.jsonl', recs), 'expert');
  const p = proposeMapping(recs, 'expert');
  assert.deepEqual(p.format, { prompt_key: 'input', response_key: 'reference_output' });
  assert.equal(p.fields.find((f) => f.target === 'response')?.why, 'name');
  // Other names a demonstration goes by; the likelier first whatever the record's order.
  for (const k of ['output', 'completion', 'target', 'answer', 'model_output', 'ideal_response'])
    assert.equal(suggestField('response', { input: 'x', [k]: 'y' }), k, k);
  assert.equal(suggestField('response', { answer: 'a', completion: 'c' }), 'completion');
  // Named a reference output, short values: still demonstrations (the name says so).
  assert.equal(
    guessRole(
      'mine/ref.jsonl',
      recs.map((r, i) => ({ ...r, reference_output: String(i + 4) })),
    ),
    'expert',
  );
  // `output` with worked text: experts; with short values: a task's answer. GSM8K answers stay tasks.
  const out = (o: string[]) => o.map((v, i) => ({ question: `What is ${i} plus ${i}, and why?`, output: v }));
  assert.equal(
    guessRole(
      'x.jsonl',
      out([
        'Two of them make zero, since nothing added to nothing is nothing.',
        'One and one make two, as counting shows us.',
      ]),
    ),
    'expert',
  );
  assert.equal(guessRole('x.jsonl', out(['0', '2'])), 'task');
  assert.equal(
    guessRole(
      'x.jsonl',
      out(['Add zero to zero and you get zero again #### 0', 'One and one make two, as counting shows #### 2']),
    ),
    'task',
  );
});
