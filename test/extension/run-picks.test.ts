// Pick lists of runs (Resume, Pause, Stop, Open Buffer, Report): three runs named `my-run` are told
// apart by status, step, start time and short id, newest first, the full id below.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RunInfo } from '../../backend/core/protocol.js';
import { runPickItems, shortRunId, startedAt } from '../../src/commands/run-picks.js';

test('run pick items: same-named runs differ by status, step, start time and short id', () => {
  const at = (h: number, m: number) => new Date(2026, 10, 29, h, m).getTime();
  const runs: RunInfo[] = [
    {
      id: 'run-20261129-071500-k3f9',
      name: 'my-run',
      status: 'failed',
      step: 12,
      totalSteps: 50,
      createdAt: at(7, 15),
    },
    { id: 'run-20261129-091000-zz01', name: 'my-run', status: 'failed', step: 3, createdAt: at(9, 10) },
    { id: 'run-20261129-080200-a1b2', name: 'my-run', status: 'failed', createdAt: at(8, 2) },
  ];
  const items = runPickItems(runs);
  assert.deepEqual(
    items.map((i) => [i.label, i.description, i.detail]),
    [
      ['my-run', 'failed · step 3 · started 29 Nov 09:10 · #zz01', 'run-20261129-091000-zz01'],
      ['my-run', 'failed · started 29 Nov 08:02 · #a1b2', 'run-20261129-080200-a1b2'],
      ['my-run', 'failed · step 12/50 · started 29 Nov 07:15 · #k3f9', 'run-20261129-071500-k3f9'],
    ],
  );
  assert.equal(new Set(items.map((i) => `${i.label} ${i.description}`)).size, 3);
});

test('short run id: the random tail of a server id, the end of a long other id, a short id whole', () => {
  assert.equal(shortRunId('run-20261129-071500-k3f9'), 'k3f9');
  assert.equal(shortRunId('my-run-20261129-071500'), '…071500');
  assert.equal(shortRunId('r1'), 'r1');
  assert.equal(startedAt(new Date(2026, 0, 3, 9, 5).getTime()), '3 Jan 09:05');
});
