// A run id names folders (issue 40, item 24): a distributed `--run "../../../outside/pwn"` wrote its
// v0 checkpoint outside --weights, and `..` passed the local registry's check. Both are refused by
// the flag or field that gave them, before anything is written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkRunId } from '../../backend/core/run-id.js';
import { versionDir } from '../../backend/coordinator/distributed/weights.js';
import { RunRegistry } from '../../backend/buffer/runs.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('run ids that would leave their folder are refused, ordinary ones kept', async () => {
  for (const id of ['my-run-20260101-120000', 'a.b_c', 'R1']) assert.equal(checkRunId(id), id);
  for (const bad of ['..', '.', '../../outside/pwn', 'a/b', '.hidden', '', 'a\\b', 'x'.repeat(129)])
    assert.throws(() => checkRunId(bad, '--run'), /field '--run': '.*' is not a run id/, bad);
  assert.throws(() => versionDir('/w', '../../outside/pwn', 0), /is not a run id/);
  const ws = mkdtempSync(join(tmpdir(), 'rft-runid-'));
  const reg = await RunRegistry.open(ws);
  await assert.rejects(reg.create({ name: 'x', config: {}, id: '..' }), /'\.\.' is not a run id/);
  assert.match((await reg.create({ name: 'x', config: {}, id: 'ok-1' })).id, /^ok-1$/);
});

test('rft coordinator --run ../../../outside/pwn is refused by its flag; nothing is written outside --weights', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-runid-cli-'));
  const weights = join(dir, 'a', 'b', 'c', 'weights');
  mkdirSync(weights, { recursive: true });
  writeFileSync(join(dir, 'c.yaml'), 'taskset:\n  builtin: arithmetic\nworkflow:\n  reward: math_answer\n');
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'backend/cli.ts'),
      'coordinator',
      join(dir, 'c.yaml'),
      '--buffer',
      'postgres://127.0.0.1:1/none',
      '--run',
      '../../../outside/pwn',
      '--weights',
      weights,
    ],
    { cwd: ROOT, encoding: 'utf8', timeout: 90_000 },
  );
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /field '--run': '\.\.\/\.\.\/\.\.\/outside\/pwn' is not a run id/);
  assert.equal(existsSync(join(dir, 'a', 'outside')), false);
});
