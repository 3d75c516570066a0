import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RestartPolicy } from '../../src/backend/restart-policy.js';

test('back-off doubles, is capped, and gives up after too many deaths in the window', () => {
  const p = new RestartPolicy({ baseDelayMs: 100, maxDelayMs: 350, maxRestarts: 3, windowMs: 1000 });
  assert.equal(p.onDeath(0), 100);
  assert.equal(p.onDeath(10), 200);
  assert.equal(p.onDeath(20), 350);
  assert.equal(p.onDeath(30), null);
});

test('deaths outside the window are forgotten', () => {
  const p = new RestartPolicy({ baseDelayMs: 100, maxDelayMs: 1000, maxRestarts: 2, windowMs: 1000 });
  assert.equal(p.onDeath(0), 100);
  assert.equal(p.onDeath(500), 200);
  assert.equal(p.onDeath(2000), 100);
  p.reset();
  assert.equal(p.onDeath(2001), 100);
});
