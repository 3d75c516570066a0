// What `rft` prints when a command fails: an error of a kind (input, conflict, infrastructure) is
// its message on one line; a bare Error is a bug and names the line of code that threw it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { errorReport } from '../../backend/cli/command.js';
import { ConflictError, InfrastructureError, InputError } from '../../backend/core/errors.js';
import { RunLiveError } from '../../backend/buffer/runs.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('errors of a kind are their message; a bare Error adds where it was thrown', () => {
  assert.equal(
    errorReport(new InputError('must be even', { field: 'trainer.batch_size' })),
    "rft: field 'trainer.batch_size': must be even",
  );
  assert.equal(errorReport(new ConflictError('changed since')), 'rft: changed since');
  assert.equal(errorReport(new InfrastructureError('storage is gone')), 'rft: storage is gone');
  assert.equal(errorReport(new RunLiveError('r1', 42, '/runs/r1')).split('\n').length, 1);
  const bug = errorReport(new Error('x is undefined')).split('\n');
  assert.equal(bug[0], 'rft: x is undefined');
  assert.match(bug[1]!, /^at .*error-report\.test\.ts:\d+:\d+/);
  assert.match(bug[1]!, /RFT_DEBUG=1/);
  assert.equal(errorReport('plain'), 'rft: plain');
  // RFT_DEBUG: the whole stack for every kind.
  assert.match(errorReport(new InputError('bad'), true), /^rft: bad\n.*InputError: bad\n\s+at /);
});

test('a bad argument on the command line is one line on stderr, exit code 2 (a usage error)', () => {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'backend/cli.ts'), 'run', 'c.yaml', '--budget', 'abc'],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
    },
  );
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.stderr.trim(), "rft: --budget expects a number, got 'abc'");
});
