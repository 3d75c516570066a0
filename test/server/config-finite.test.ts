// config/validate in the editor: a number that is not finite (YAML .inf / .nan), which the schema
// alone lets through, is a problem at the line of its key.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServe } from '../../tools/spawn-serve.js';

const s = spawnServe(['--workspace', mkdtempSync(join(tmpdir(), 'rft-cfg-finite-'))]);
after(() => s.close());

test('config/validate: lr .inf and a .nan algorithm parameter at their lines', async () => {
  const text =
    'name: t\ntaskset:\n  builtin: reverse\nworkflow:\n  reward: exact_match\ntrainer:\n  lr: .inf\nalgorithm:\n  name: mix\n  params:\n    mu: .nan\n';
  const r = await s.request('config/validate', { file: 'x.rft.yaml', text });
  assert.deepEqual(
    r.issues.map((i) => [i.field, i.line, i.message]),
    [
      ['trainer.lr', 7, 'must be a finite number, got Infinity'],
      ['algorithm.params.mu', 11, 'must be a finite number, got NaN'],
    ],
  );
});
