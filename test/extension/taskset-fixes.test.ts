// A taskset written with other field names (`question`, `solution`, a typo): the real validator's
// "required field is missing" gets a did-you-mean in Problems and a quick fix renames the field on
// the line or in every record; the fixed text then validates.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { vscode } from '../../tools/fake-vscode/harness.js';
import { parseTaskset } from '../../backend/buffer/taskset/load.js';

const { suggestField, renameFor, TasksetQuickFixes } = await import('../../src/taskset-fixes.js');
const { toDiagnostic } = await import('../../src/diagnostics.js');

test('suggestions: synonyms other datasets use, typos; nothing for an unrelated field', () => {
  assert.equal(suggestField('prompt', { id: 'a', question: 'q', answer: '2' }), 'question');
  assert.equal(suggestField('answer', { id: 'a', prompt: 'q', answr: '2' }), 'answr');
  assert.equal(suggestField('answer', { id: 'a', prompt: 'q', solution: '2' }), 'solution');
  assert.equal(suggestField('prompt', { id: 'a', colour: 'red' }), undefined);
  assert.deepEqual(renameFor("field 'prompt': required field is missing", '{"id":"a","question":"1+1?"}'), {
    from: 'question',
    to: 'prompt',
  });
  assert.equal(
    renameFor("field 'prompt': prompt is empty", '{"id":"a","question":"1+1?"}'),
    undefined,
    'only for a missing field',
  );
  assert.equal(renameFor("field 'prompt': required field is missing", 'not json'), undefined);
});

const TEXT = [
  '{"id":"a","question":"1+1?","answer":"2"}',
  '{"id":"b","question":"2+2?","answer":"4"}',
  '{"id":"c","prompt":"3+3?","answr":"6"}',
  '{"id":"d","prompt":"4+4?","answer":"8"}',
].join('\n');

function apply(
  text: string,
  edits: { range: { start: { line: number; character: number }; end: { character: number } }; text: string }[],
): string {
  const lines = text.split('\n');
  for (const e of [...edits].sort((a, b) => b.range.start.character - a.range.start.character)) {
    const l = lines[e.range.start.line]!;
    lines[e.range.start.line] = l.slice(0, e.range.start.character) + e.text + l.slice(e.range.end.character);
  }
  return lines.join('\n');
}

test('Problems says what was meant; the quick fix renames on the line or in every record, and the file then validates', () => {
  const doc = vscode.textDocument(vscode.Uri.file('/w/tasksets/gsm.jsonl'), TEXT);
  const report = parseTaskset(TEXT, '/w/tasksets/gsm.jsonl');
  assert.deepEqual(
    report.errors.map((e) => `${e.line} ${e.field}: ${e.message}`),
    [
      '1 prompt: required field is missing',
      '2 prompt: required field is missing',
      '3 answer: required field is missing',
    ],
  );
  const diags = report.errors.map((e) => toDiagnostic({ ...e, severity: 'error' }, doc));
  assert.equal(
    diags[0]!.message,
    "field 'prompt': required field is missing; the record has 'question': did you mean 'prompt'? (a quick fix maps 'question' as the prompt in the run config, or renames it)",
  );
  assert.equal(
    diags[2]!.message,
    "field 'answer': required field is missing; the record has 'answr': did you mean 'answer'? (a quick fix maps 'answr' as the answer in the run config, or renames it)",
  );

  // The preferred fix maps the field in the run config (Map Fields, tested in own-files.test.ts); renaming follows.
  const offered = new TasksetQuickFixes().provideCodeActions(
    doc as never,
    diags[0]!.range as never,
    { diagnostics: [diags[0]] } as never,
  ) as unknown as { title: string; edit: { edits: never[] }; command?: { command: string; arguments: unknown[] } }[];
  assert.equal(offered[0]!.title, "Map 'question' as the prompt in the run config");
  assert.deepEqual(offered[0]!.command!.arguments[1], { target: 'prompt', key: 'question' });
  const fixes = offered.slice(1);
  assert.deepEqual(
    fixes.map((f) => f.title),
    ["Rename 'question' to 'prompt'", "Rename 'question' to 'prompt' in every record of this file (2 records)"],
  );
  assert.equal(apply(TEXT, fixes[0]!.edit.edits).split('\n')[0], '{"id":"a","prompt":"1+1?","answer":"2"}');
  const all = apply(TEXT, fixes[1]!.edit.edits);
  const typo = (
    new TasksetQuickFixes().provideCodeActions(
      doc as never,
      diags[2]!.range as never,
      { diagnostics: [diags[2]] } as never,
    ) as unknown as { title: string; edit: { edits: never[] } }[]
  ).slice(1);
  assert.deepEqual(
    typo.map((f) => f.title),
    ["Rename 'answr' to 'answer'"],
    'one record: no file-wide fix',
  );
  const fixed = apply(all, typo[0]!.edit.edits);
  const again = parseTaskset(fixed, '/w/tasksets/gsm.jsonl');
  assert.deepEqual(again.errors, []);
  assert.equal(again.tasks.length, 4);
});

test('every problem of a record reaches Problems (no "(and 1 more problem)")', () => {
  const report = parseTaskset('{"id":"d"}\n', '/w/tasksets/t.jsonl');
  assert.deepEqual(
    report.errors.map((e) => `${e.field}: ${e.message}`),
    ["prompt: required field is missing; also 'answer': required field is missing"],
  );
  const doc = vscode.textDocument(vscode.Uri.file('/w/tasksets/t.jsonl'), '{"id":"d"}');
  assert.equal(
    toDiagnostic({ ...report.errors[0]!, severity: 'error' }, doc).message,
    "field 'prompt': required field is missing; also 'answer': required field is missing",
  );
  // Each missing field the record carries under another name is suggested, not only the first.
  const both = vscode.textDocument(vscode.Uri.file('/w/tasksets/t.jsonl'), '{"id":"d","problem":"1+1?","final":"2"}');
  const d = toDiagnostic({ ...report.errors[0]!, severity: 'error' }, both);
  assert.match(
    d.message,
    /the record has 'problem': did you mean 'prompt'\?; the record has 'final': did you mean 'answer'\? \(quick fixes map them in the run config, or rename them\)/,
  );
  const titles = (
    new TasksetQuickFixes().provideCodeActions(
      both as never,
      d.range as never,
      { diagnostics: [d] } as never,
    ) as unknown as { title: string }[]
  ).map((f) => f.title);
  assert.deepEqual(titles, [
    "Map 'problem' as the prompt in the run config",
    "Rename 'problem' to 'prompt'",
    "Map 'final' as the answer in the run config",
    "Rename 'final' to 'answer'",
  ]);
});

test("a column of the user's own named like a schema field: explained in Problems, a quick fix renames it in every record (issue 40 item 1)", () => {
  const text = [
    '{"key":"k1","input":"What is 1 plus 1?","label":"2","difficulty":"easy"}',
    '{"key":"k2","input":"What is 2 plus 2?","label":"4","difficulty":"hard"}',
    '{"key":"k3","input":"What is 3 plus 3?","label":"6","level":3,"difficulty":"easy"}',
  ].join('\n');
  const file = '/w/mine/levels.jsonl';
  const doc = vscode.textDocument(vscode.Uri.file(file), text);
  const fields = { prompt_key: 'input', response_key: 'label', id_key: 'key' };
  const r = parseTaskset(text, file, { fields, defaultIds: true });
  assert.equal(r.tasks.length, 3);
  const d = toDiagnostic({ ...r.warnings![0]!, severity: 'warning' }, doc);
  assert.match(d.message, /^field 'difficulty': holds "easy", not the task difficulty/);
  const fixes = new TasksetQuickFixes().provideCodeActions(
    doc as never,
    d.range as never,
    {
      diagnostics: [d],
    } as never,
  ) as unknown as { title: string; edit: { edits: never[] } }[];
  // `level` is taken in the file: the free name.
  assert.deepEqual(
    fixes.map((f) => f.title),
    ["Rename the column 'difficulty' to 'difficulty_label' (your own, kept in metadata)"],
  );
  const renamed = apply(text, fixes[0]!.edit.edits);
  assert.ok(!renamed.includes('"difficulty"'));
  const again = parseTaskset(renamed, file, { fields, defaultIds: true });
  assert.equal(again.warnings, undefined, 'nothing left to explain');
  assert.deepEqual(again.tasks[0]!.metadata, { difficulty_label: 'easy' });

  // An error in a column some of whose values fit (a typo or the user's own): the same fix.
  const typo =
    '{"id":"a","prompt":"1+1?","answer":"2","difficulty":0.2}\n{"id":"b","prompt":"2+2?","answer":"4","difficulty":"0.4"}';
  const e = parseTaskset(typo, '/w/tasksets/t.jsonl').errors[0]!;
  const tdoc = vscode.textDocument(vscode.Uri.file('/w/tasksets/t.jsonl'), typo);
  const td = toDiagnostic({ ...e, severity: 'error' }, tdoc);
  const tfix = new TasksetQuickFixes().provideCodeActions(
    tdoc as never,
    td.range as never,
    {
      diagnostics: [td],
    } as never,
  ) as unknown as { title: string; edit: { edits: never[] } }[];
  assert.deepEqual(
    tfix.map((f) => f.title),
    ["Rename the column 'difficulty' to 'level' (your own, kept in metadata)"],
  );
  assert.equal(tfix[0]!.edit.edits.length, 2, 'every record');

  // CSV: the header cell; YAML: each item's key. The renamed files load with the column as metadata.
  for (const [name, body] of [
    ['t.csv', 'id,prompt,answer,difficulty\na,1+1?,2,easy\nb,2+2?,4,hard'],
    [
      't.yaml',
      '- id: a\n  prompt: 1+1?\n  answer: "2"\n  difficulty: easy\n- difficulty: hard\n  id: b\n  prompt: 2+2?\n  answer: "4"',
    ],
  ] as const) {
    const f = `/w/tasksets/${name}`;
    const w = parseTaskset(body, f).warnings![0]!;
    const fdoc = vscode.textDocument(vscode.Uri.file(f), body);
    const fd = toDiagnostic({ ...w, severity: 'warning' }, fdoc);
    const [fix] = new TasksetQuickFixes().provideCodeActions(
      fdoc as never,
      fd.range as never,
      {
        diagnostics: [fd],
      } as never,
    ) as unknown as { title: string; edit: { edits: never[] } }[];
    assert.equal(fix?.title, "Rename the column 'difficulty' to 'level' (your own, kept in metadata)", name);
    const after = parseTaskset(apply(body, fix!.edit.edits), f);
    assert.equal(after.warnings, undefined, name);
    assert.deepEqual(
      after.tasks.map((t) => t.metadata),
      [{ level: 'easy' }, { level: 'hard' }],
      name,
    );
  }
});
