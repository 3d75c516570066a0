// A config naming a taskset, eval or experts file that is not there (the template's placeholder
// `tasksets/math.jsonl`, issue 28): a problem at the line of its `path` in the editor, and `rft run`
// refuses it with the path before any work (not an ENOENT at step 0).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServe } from '../../tools/spawn-serve.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';

const ws = mkdtempSync(join(tmpdir(), 'rft-cfg-missing-'));
mkdirSync(join(ws, 'mine'));
writeFileSync(join(ws, 'mine', 'math.jsonl'), '{"id":"a","prompt":"1+1?","answer":"2"}\n');
const TEXT = [
  'name: t',
  'taskset:',
  '  path: tasksets/math.jsonl',
  '  domain: math',
  'eval:',
  '  path: mine/math.jsonl',
  'experts:',
  '  path: mine',
  'workflow:',
  '  reward: math_answer',
  '',
].join('\n');
const s = spawnServe(['--workspace', ws]);
after(() => s.close());

test('config/validate: a missing taskset file and a folder as experts, at the lines of their paths', async () => {
  const r = await s.request('config/validate', { file: join(ws, 'train.rft.yaml'), text: TEXT });
  // The editor names the missing file at the line of its path, and a folder where a file belongs (as rft run does, below).
  assert.deepEqual(
    r.issues.map((i) => [i.field, i.line]),
    [
      ['taskset.path', 3],
      ['experts.path', 8],
    ],
  );
  assert.match(r.issues[1]!.message, /'mine' is a folder, not a file/);
  assert.match(
    r.issues[0]!.message,
    /no file 'tasksets\/math\.jsonl' \(.*tasksets\/math\.jsonl; paths are relative to the config file\)/,
  );
  // Once the files are there, nothing.
  const ok = await s.request('config/validate', {
    file: join(ws, 'train.rft.yaml'),
    text: TEXT.replace('tasksets/math.jsonl', 'mine/math.jsonl').replace('  path: mine\n', '  path: mine/math.jsonl\n'),
  });
  assert.deepEqual(ok.issues, []);
});

test('rft run refuses it with the path, before any work; a folder named as a file too', () => {
  const file = join(ws, 'train.rft.yaml');
  writeFileSync(file, TEXT.replace('  path: mine\n', '  path: mine/math.jsonl\n'));
  assert.throws(
    () => loadRunConfig(file),
    (e: Error) => {
      assert.match(
        e.message,
        /train\.rft\.yaml: field 'taskset\.path': no file 'tasksets\/math\.jsonl' \(looked for .*tasksets\/math\.jsonl/,
      );
      return true;
    },
  );
  writeFileSync(file, TEXT.replace('tasksets/math.jsonl', 'mine/math.jsonl'));
  assert.throws(
    () => loadRunConfig(file),
    /field 'experts\.path': 'mine' is a folder without split files \(train-00000-of-00001\.parquet, \.\.\.\): name a taskset file/,
  );
});
