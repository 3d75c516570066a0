// Issue 24 (low): the trainer's reasons for waiting were wrong when the trainer itself was cut off
// from the database (after the cut it said "N explorer(s) at work") and when an explorer stopped
// reporting or was in error ("no explorer is running" for an explorer that ran, frozen or cut off).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { waitReason } from '../../../backend/coordinator/distributed/wait-reason.js';
import { LinkWatch } from '../../../backend/coordinator/distributed/link-watch.js';
import { withRetry } from '../../../backend/buffer/queue/retry.js';
import type { WorkerRow } from '../../../backend/buffer/queue/job-queue.js';

const w = (id: string, state: string, ageS: number, detail: string | null = null, role = 'explorer'): WorkerRow => ({
  id,
  host: 'h1',
  pid: 1,
  role,
  state,
  detail,
  modelVersion: 3,
  done: 0,
  throughput: 0,
  startedAt: 0,
  lastHeartbeat: 0,
  ageS,
});

test('explorers in error, silent or at work are each named; none at all says how to start one', () => {
  assert.equal(
    waitReason([w('e1', 'generating', 1), w('t', 'training', 1, null, 'trainer')], null),
    '1 explorer(s) at work',
  );
  assert.equal(waitReason([], null), 'no explorer is running (start `rft explorer --buffer URL --run RUN`)');
  // An explorer that cannot load the weights: in error, with why; the one at work is counted apart.
  assert.equal(
    waitReason([w('e1', 'error', 1, 'weights v3: ECONNREFUSED'), w('e2', 'waiting', 2)], null),
    '1 explorer(s) at work; 1 explorer(s) in error: weights v3: ECONNREFUSED',
  );
  // Was: "no explorer is running" for an explorer cut off from the database (its last row says it was generating).
  const silent = waitReason([w('explorer@h2:9-ab', 'generating', 45, 'job 4:1')], null);
  assert.match(
    silent,
    /^1 explorer\(s\) silent \(no heartbeat for 45 s or more; last: explorer@h2:9-ab on h1, generating: job 4:1\) — cut off from the database, frozen or killed; no explorer is reporting$/,
  );
  assert.doesNotMatch(silent, /no explorer is running/);
  // Stopped and finished explorers are not waited on.
  assert.equal(
    waitReason([w('e1', 'stopped', 100), w('e2', 'done', 100)], null),
    'no explorer is running (start `rft explorer --buffer URL --run RUN`)',
  );
});

test('a trainer that lost the database itself says so, not "explorers at work"', async () => {
  let now = 1_000_000;
  const link = new LinkWatch(() => now);
  const start = now;
  // The trainer's queries fail on the connection for 40 s, then succeed (withRetry with the watch's options).
  let fails = 2;
  const q = withRetry(async () => {
    if (fails-- > 0) {
      now += 20_000;
      throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' });
    }
    return 'rows';
  }, link.retry());
  assert.equal(await q, 'rows');
  const after = waitReason([w('e1', 'generating', 1)], link.outageSince(start));
  assert.match(
    after,
    /^this trainer could not reach the database for 20 s of this wait \(connect ECONNREFUSED 10\.0\.0\.5:5432\); 1 explorer\(s\) at work$/,
  );
  // While it is still cut off the explorers' rows are old news: not reported as at work.
  link.failed(new Error('Connection terminated unexpectedly'));
  now += 15_000;
  assert.equal(
    waitReason([w('e1', 'generating', 1)], link.outageSince(start)),
    "this trainer cannot reach the database (for 35 s: Connection terminated unexpectedly); the explorers' state is not known",
  );
  // A wait that began after the outage ended is not blamed on it.
  link.recovered();
  now += 1000;
  assert.equal(link.outageSince(now - 500), null);
});
