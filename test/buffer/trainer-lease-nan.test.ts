// A lease row with a NaN `since` (issue 40, item 24; DOUBLE PRECISION takes 'NaN'): building the
// fence or held error threw a bare RangeError "Invalid time value" instead of the error itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  TrainerFencedError,
  TrainerLeaseHeldError,
  type TrainerLeaseRow,
} from '../../backend/buffer/storage/trainer-lease.js';

const row: TrainerLeaseRow = {
  runId: 'r1',
  epoch: 3,
  holder: 'trainer-b',
  host: 'h2',
  pid: 42,
  machine: '',
  since: Number.NaN,
  renewedAt: Number.NaN,
  released: false,
};

test('a NaN since or renewed_at is said in the lease errors, not thrown as Invalid time value', () => {
  const fenced = new TrainerFencedError('r1', 2, row, 'the checkpoint');
  assert.match(fenced.message, /which holds it since an unreadable time \(NaN in the lease row\)/);
  const held = new TrainerLeaseHeldError(row, Date.now(), 30_000);
  assert.match(held.message, /since an unreadable time \(NaN in the lease row\), last renewed \? s ago/);
  const ok = new TrainerFencedError('r1', 2, { ...row, since: 0 }, 'the checkpoint');
  assert.match(ok.message, /since 1970-01-01T00:00:00\.000Z/);
});
