// The explorer process's loop under an async lead (backend/explorer/explorer-loop.ts): explore step t does
// not start while t - (newest published version) > lead; that wait is counted as backpressure, not
// as waiting for weights; a trainer that is waiting on an empty buffer lets one step start past the
// bound (marked `starved`), so a run cannot deadlock on it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { leadWait, runExplorerLoop } from '../../backend/explorer/explorer-loop.js';
import type { Explorer, ExploreMetrics } from '../../backend/explorer/explorer.js';
import type { RolloutModel } from '../../backend/explorer/workflow.js';

const until = async (cond: () => boolean, what: string, ms = 20_000) => {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

test('leadWait: only an async lead bounds a step, by the newest published version', () => {
  assert.equal(leadWait(5, 3, 2), null);
  assert.equal(leadWait(6, 3, 2), 'bound');
  assert.equal(leadWait(6, 3, undefined), null);
  assert.equal(leadWait(6, undefined, 2), null);
  assert.equal(leadWait(3, 3, 0), null);
  assert.equal(leadWait(4, 3, 0), 'bound');
});

test('explorer loop, async lead: waits for the trainer at the bound (backpressure), goes past it only when the trainer starves', async () => {
  let published = 0;
  let starved = false;
  const made: Array<{ step: number; version: number }> = [];
  const fake = {
    step: 0,
    exploreStep: async (m: RolloutModel): Promise<ExploreMetrics> => {
      made.push({ step: fake.step, version: m.version });
      starved = false; // the rows this step makes are what the waiting trainer takes
      return {
        explore_step: fake.step,
        model_version: m.version,
        experiences: 2,
        reward_mean: 0,
        ok: 2,
        trainable: 2,
        invalid: 0,
        infra_failure: 0,
        rollout_s: 0.001,
        tokens: 4,
      };
    },
  };
  const explorer = fake as unknown as Explorer;
  const recs: Record<string, unknown>[] = [];
  const states: string[] = [];
  const stop = new AbortController();
  const loop = runExplorerLoop({
    explorer,
    target: 0,
    requiredVersion: () => 0, // async: the stage's start checkpoint only
    lead: 2,
    trainerStarved: async () => starved,
    latest: async () => ({ version: published, path: `v${published}` }),
    load: async (w) => ({ version: w.version }) as unknown as RolloutModel,
    onMetrics: (r) => recs.push(r),
    onState: (s, d) => states.push(`${s}:${d ?? ''}`),
    pollMs: 2,
    signal: stop.signal,
  });
  // A failed check must not leave the loop polling (the test would never end).
  try {
    // Steps 0, 1, 2 are within 2 of v0; step 3 is not.
    await until(() => made.length === 3, 'three steps');
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(made.length, 3, 'a step started more than 2 ahead of the newest published version');
    assert.ok(
      states.some((s) => s.startsWith('waiting:step 3 is more than 2 ahead of v0')),
      states.join(', '),
    );
    // The trainer publishes v1: step 3 may start, step 4 may not.
    published = 1;
    await until(() => made.length === 4, 'step 3');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(made.length, 4);
    // The trainer waits on an empty buffer: one step past the bound, then the bound again.
    starved = true;
    await until(() => made.length === 5, 'the starved step');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(made.length, 5, 'the explorer kept going past the bound once the trainer had rows');
  } finally {
    stop.abort();
  }
  const r = await loop;
  assert.equal(r.target, 5);
  assert.deepEqual(
    made.map((m) => m.version),
    [0, 0, 0, 1, 1],
  );
  const explore = recs.filter((x) => x.kind === 'explore');
  assert.deepEqual(
    explore.map((x) => x.ahead),
    [0, 1, 2, 2, 3],
  );
  assert.deepEqual(
    explore.map((x) => x.starved === true),
    [false, false, false, false, true],
  );
  // The bound wait is backpressure, not waiting for weights (async never waits for weights here).
  const last = recs.filter((x) => x.kind === 'state').at(-1)!;
  assert.ok((last.explorer_backpressure as number) > 0.3, `backpressure ${String(last.explorer_backpressure)}`);
  assert.ok(
    (last.explorer_idle as number) < 0.05,
    `explorer_idle ${String(last.explorer_idle)} counts the bound wait as waiting for weights`,
  );
  assert.ok((last.explorer_backpressure_s as number) <= (last.explorer_waiting_s as number) + 1e-9);
  assert.ok(r.backpressure > 0.3 && r.idle < 0.05);
});

test('explorer loop without a lead (sync_offset): no bound, explorer_backpressure not reported', async () => {
  let published = 0;
  const made: number[] = [];
  const fake = {
    step: 0,
    exploreStep: async (m: RolloutModel): Promise<ExploreMetrics> => {
      made.push(fake.step);
      return {
        explore_step: fake.step,
        model_version: m.version,
        experiences: 1,
        reward_mean: 0,
        ok: 1,
        trainable: 1,
        invalid: 0,
        infra_failure: 0,
        rollout_s: 0.001,
        tokens: 1,
      };
    },
  };
  const explorer = fake as unknown as Explorer;
  const recs: Record<string, unknown>[] = [];
  const r = await runExplorerLoop({
    explorer,
    target: 0,
    requiredVersion: (t) => Math.max(0, t - 1), // one_step_off
    latest: async () => ({ version: published, path: '' }),
    load: async (w) => ({ version: w.version }) as unknown as RolloutModel,
    onStep: () => {
      published++;
    },
    onMetrics: (x) => recs.push(x),
    maxSteps: 5,
    pollMs: 1,
  });
  assert.equal(r.target, 5);
  assert.deepEqual(made, [0, 1, 2, 3, 4]);
  assert.ok(recs.filter((x) => x.kind === 'state').every((x) => !('explorer_backpressure' in x)));
});

test('explorer loop: a step cut short by the stop is not recorded as done (a resume explores it again)', async () => {
  const stop = new AbortController();
  const done: number[] = [];
  const fake = {
    step: 0,
    cutShort: false,
    exploreStep: async (m: RolloutModel): Promise<ExploreMetrics> => {
      // Step 1: the stop lands while the step refills (FillingExplorer marks it cut short).
      if (fake.step === 1) {
        stop.abort();
        fake.cutShort = true;
      }
      return {
        explore_step: fake.step,
        model_version: m.version,
        experiences: 2,
        reward_mean: 0,
        ok: 2,
        trainable: fake.step === 1 ? 1 : 2,
        invalid: 0,
        infra_failure: 0,
        rollout_s: 0.001,
        tokens: 4,
      };
    },
  };
  await runExplorerLoop({
    explorer: fake as unknown as Explorer,
    target: 0,
    requiredVersion: () => 0,
    latest: async () => ({ version: 0, path: 'v0' }),
    load: async (w) => ({ version: w.version }) as unknown as RolloutModel,
    onStep: (next) => void done.push(next),
    onMetrics: () => undefined,
    pollMs: 2,
    signal: stop.signal,
  });
  assert.deepEqual(done, [1], 'step 0 done (next: 1); step 1, cut short, not recorded');
});
