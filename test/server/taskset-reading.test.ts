// taskset/validate with a run config's reading of the file: records with foreign names
// (`uid` / `question` / `solution`) are valid under the config's `format:` mapping, as the run loads
// them, and still flagged without it; an expert file needs its responses; a reading naming an
// unknown mapping key is refused naming the field.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServe, type Served } from '../../tools/spawn-serve.js';

const ws = mkdtempSync(join(tmpdir(), 'rft-reading-'));
let s: Served;
before(() => {
  s = spawnServe(['--workspace', ws]);
});
after(async () => {
  await s.close();
});

test('a file with foreign names: flagged read plainly, valid under the mapping', async () => {
  const file = join(ws, 'words.jsonl');
  writeFileSync(
    file,
    '{"uid":"w1","question":"1+2=","solution":"1 plus 2 #### 3"}\n{"uid":"w2","question":"","solution":"#### 4"}\n{"uid":"w3","question":"2+2=","solution":"#### 4"}\n',
  );
  const plain = await s.request('taskset/validate', { file });
  assert.equal(plain.tasks, 0);
  assert.equal(plain.issues.length, 3);
  const mapped = await s.request('taskset/validate', {
    file,
    reading: { format: { prompt_key: 'question', response_key: 'solution', id_key: 'uid' }, domain: 'math' },
  });
  assert.equal(mapped.tasks, 2, 'the two good records count under the mapping');
  assert.deepEqual(
    mapped.issues.map((i) => [i.line, i.field]),
    [[2, 'question']],
    "the empty question is still a problem at its line, named by the file's own field",
  );
});

test('an experts file read as experts: a record without a response is a problem', async () => {
  const file = join(ws, 'experts.jsonl');
  writeFileSync(file, '{"question":"1+2=","completion":"3"}\n{"question":"3+4="}\n');
  const r = await s.request('taskset/validate', {
    file,
    reading: { format: { prompt_key: 'question', response_key: 'completion' }, role: 'expert' },
  });
  assert.equal(r.tasks, 1);
  assert.deepEqual(
    r.issues.map((i) => i.line),
    [2],
  );
});

test('a reading with an unknown mapping key is refused naming it', async () => {
  const file = join(ws, 'words.jsonl');
  await assert.rejects(
    s.request('taskset/validate', { file, reading: { format: { question_key: 'question' } } }),
    (e: { code: number; message: string }) => e.code === -32002 && /question_key/.test(e.message),
  );
});
