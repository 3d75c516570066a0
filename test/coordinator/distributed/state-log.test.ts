// Issue 24 (low): explorers logged ~2.4 lines/s while waiting although the docs promise one line per
// kind of wait every 30 s. The explorer's loop alternates kinds (syncing vN, then waiting for a job
// for vN, then syncing vN+1 ...): remembering only the last kind logged both at every trainer step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StateLog } from '../../../backend/coordinator/distributed/state-log.js';

function run(steps: number, msPerStep: number): string[] {
  let now = 0;
  const lines: string[] = [];
  const s = new StateLog(
    (level, line) => lines.push(`${level} ${line}`),
    () => now,
  );
  // The explorer's loop while a fast trainer publishes a version every msPerStep.
  for (let v = 1; v <= steps; v++) {
    s.say('syncing', `v${v}`);
    now += msPerStep / 2;
    s.say('waiting', `no job for v${v}`);
    now += msPerStep / 2;
  }
  return lines;
}

test('alternating kinds of wait: one line per kind, again after 30 s, not two lines per step', () => {
  // 60 s of steps of 0.8 s (the hostile round's ~2.4 lines/s would be ~150 lines).
  const lines = run(75, 800);
  // v1 at 0 s, v39 at 30.4 s: 4 lines in 60 s.
  assert.deepEqual(lines, [
    'info syncing: v1',
    'info waiting: no job for v1',
    'info syncing: v39',
    'info waiting: no job for v39',
  ]);
});

test('a new kind (an error, another reason) is logged at once; the same kind at another level too', () => {
  let now = 0;
  const lines: string[] = [];
  const s = new StateLog(
    (level, line) => lines.push(`${level} ${line}`),
    () => now,
  );
  assert.equal(s.say('waiting', 'no job for v1'), true);
  now += 100;
  assert.equal(s.say('waiting', 'no job for v2'), false, 'same kind, numbers differ');
  assert.equal(s.say('waiting', 'weights v2 are stale (newest v5, bound 1)'), true);
  assert.equal(s.say('error', 'weights v3: ECONNREFUSED', 'error'), true);
  now += 1000;
  assert.equal(s.say('error', 'weights v3: ECONNREFUSED', 'error'), false);
  now += 30_000;
  assert.equal(s.say('error', 'weights v4: ECONNREFUSED', 'error'), true, 'again every 30 s while it lasts');
  assert.equal(lines.length, 4);
});
