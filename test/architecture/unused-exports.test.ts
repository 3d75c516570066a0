// No dead exports: every name that backend, src or webview exports is imported somewhere (product
// code, a test or a bench) or used in its own file (scripts/unused-exports.ts). A function nobody
// calls any more shows up here instead of living on as an export.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { unusedExports } from '../../scripts/unused-exports.js';

/** Left on purpose, each with its reason. */
const KNOWN = new Set<string>([]);

test('no exported name is used nowhere', () => {
  const dead = unusedExports()
    .filter((u) => !u.usedLocally)
    .map((u) => `${u.file}: ${u.name}`)
    .filter((u) => !KNOWN.has(u));
  assert.deepEqual(dead, []);
});

test('the check finds an export nobody imports, and counts named imports and re-exports as uses', () => {
  const all = unusedExports();
  // Used through `export ... from` chains and direct imports: not reported.
  assert.ok(!all.some((u) => u.file === 'backend/coordinator/run.ts' && u.name === 'runJob'));
  assert.ok(!all.some((u) => u.file === 'backend/buffer/sampler/fifo.ts' && u.name === 'FifoSampler'));
  // KNOWN entries are real finds (the check would report them).
  for (const k of KNOWN)
    assert.ok(
      all.some((u) => `${u.file}: ${u.name}` === k && !u.usedLocally),
      `${k} is used or gone now: delete it from KNOWN`,
    );
});
