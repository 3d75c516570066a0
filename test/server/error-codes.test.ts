// The server answers each kind of error with its own JSON-RPC code (core/errors.ts): input errors
// as InvalidInput with their location, conflicts (a buffer change refused, a live run, a held
// trainer lease) as Conflict, and the rest as an internal error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toResponseError } from '../../backend/server/errors.js';
import { ErrorCodes } from '../../backend/core/protocol.js';
import { ConflictError, InfrastructureError, InputError } from '../../backend/core/errors.js';
import { RunLiveError, RunNotFoundError } from '../../backend/buffer/runs.js';
import { PipelineConfigError } from '../../backend/buffer/pipeline/task/operator-spec.js';

test('input errors are InvalidInput, with their file/line/field', () => {
  const r = toResponseError(new InputError('unknown reward', { file: 'c.yaml', line: 3, field: 'workflow.reward' }));
  assert.equal(r.code, ErrorCodes.InvalidInput);
  assert.equal(r.message, "c.yaml:3: field 'workflow.reward': unknown reward");
  assert.deepEqual(r.data, { file: 'c.yaml', line: 3, field: 'workflow.reward' });
  assert.equal(toResponseError(new RunNotFoundError('r9', 'runs.db')).code, ErrorCodes.InvalidInput);
  assert.equal(toResponseError(new PipelineConfigError([{ path: 'p', message: 'm' }])).code, ErrorCodes.InvalidInput);
});

test('conflicts are Conflict, whichever layer refused', () => {
  assert.equal(
    toResponseError(new ConflictError("experience 'e1' changed since it was created")).code,
    ErrorCodes.Conflict,
  );
  const live = toResponseError(new RunLiveError('r1', 42, '/runs/r1'));
  assert.equal(live.code, ErrorCodes.Conflict);
  assert.match(live.message, /still running as pid 42/);
});

test('infrastructure failures and bugs are internal errors with their message', () => {
  for (const e of [new InfrastructureError('database unreachable'), new Error('bug')]) {
    const r = toResponseError(e);
    assert.equal(r.code, -32603);
    assert.equal(r.message, e.message);
  }
});
