// Issue 40 item 12: a missing file a config names is explained by how it was written: a relative
// path with where it was looked for and "paths are relative to the config file"; an absolute one
// (a model.checkpoint of /models/qwen) without that rule, which says nothing about it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { missingFiles } from '../../backend/server/adapters/config-check-cli.js';
import { errorFix } from '../../src/error-lines.js';

test('a missing absolute model.checkpoint is not "relative to the config file"; a relative taskset is', () => {
  const text = 'model:\n  checkpoint: /nowhere/qwen2\ntaskset:\n  path: data/missing.jsonl\n';
  const issues = missingFiles(text, '/ws/train.rft.yaml');
  const by = Object.fromEntries(issues.map((i) => [i.path, i.message]));
  assert.equal(by['model.checkpoint'], "no file '/nowhere/qwen2' (nothing at that absolute path)");
  assert.equal(
    by['taskset.path'],
    "no file 'data/missing.jsonl' (looked for /ws/data/missing.jsonl; paths are relative to the config file)",
  );
  assert.equal(errorFix(`field 'model.checkpoint': ${by['model.checkpoint']}`), 'Fix: check the path.');
  assert.match(errorFix(`field 'taskset.path': ${by['taskset.path']}`)!, /relative to the config file/);
});
