// trainer.batch_size (or a stage's batch_size) in an exploring stage is the trainer's whole batch,
// expert share included, and it is honoured in every placement (issue 25): a step short of it is
// explored again with the same weights until the buffer holds it. Before, an exploring stage trained
// tasks_per_step x repeat_times rows whatever the config said (here 4 against a configured 8). A
// batch whose rollout share is less than one explore step is refused at load, naming the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { runJob } from '../../backend/coordinator/run.js';
import { checkRunConfig } from '../../backend/coordinator/config-check.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import { tempWorkspace, tinyConfig } from './tiny-config.js';
import { records } from './consumption-check.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';

const STEPS = 2;

/** tiny-config (2 tasks x 2 samples a step) with one exploring stage and the given batch settings. */
function cfgWith(over: Record<string, unknown>): RunConfig {
  const base = tinyConfig({ sync_offset: 0 }) as unknown as Record<string, unknown>;
  const { config, issues } = validateRunConfig({
    ...base,
    trainer: { ...(base.trainer as object), batch_size: undefined },
    ...over,
  });
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}

const issuesOf = (c: RunConfig) => checkRunConfig(c).map((i) => `${i.path}: ${i.message}`);

test('a batch with less than one explore step of rollouts is refused, naming the field; larger or unset ones are accepted', () => {
  const grpo = (batch: Record<string, unknown>, stage: Record<string, unknown> = {}) =>
    cfgWith({ ...batch, stages: [{ name: 'g', algorithm: { name: 'grpo' }, steps: 2, ...stage }] });
  const small = issuesOf(grpo({ trainer: { batch_size: 2 } }));
  assert.equal(small.length, 1, small.join('\n'));
  assert.equal(
    small[0]!,
    'trainer.batch_size: 2 rows leave 2 for rollouts; one explore step makes 4 (explorer.tasks_per_step 2 x repeat_times 2). Fix: set trainer.batch_size to 4.',
  );
  // A stage's own batch_size is named by its path.
  assert.match(
    issuesOf(grpo({}, { batch_size: 3 })).join('\n'),
    /^stages\[0\]\.batch_size: 3 rows.*Fix: set stages\[0\]\.batch_size to 4\.$/,
  );
  // MIX: half of 4 rows is the expert share, so 4 leaves room for 2 rollouts; 8 is the least.
  const mix = issuesOf(cfgWith({ trainer: { batch_size: 4 } }));
  assert.match(
    mix.join('\n'),
    /^trainer\.batch_size: 4 rows leave 2 for rollouts \(2 go to the expert share\); one explore step makes 4 .*Fix: set trainer\.batch_size to 8\.$/,
  );
  assert.deepEqual(issuesOf(cfgWith({ trainer: { batch_size: 8 } })), []);
  assert.deepEqual(issuesOf(grpo({ trainer: { batch_size: 12 } })), []);
  assert.deepEqual(issuesOf(grpo({})), []);
  // A train-only stage takes any batch (here the SFT warm-up of 2 rows).
  assert.deepEqual(
    issuesOf(
      cfgWith({
        stages: [
          { name: 'w', algorithm: { name: 'sft' }, steps: 1, batch_size: 2 },
          { name: 'g', algorithm: { name: 'grpo' }, steps: 1 },
        ],
      }),
    ),
    [],
  );
});

test('runJob refuses the too-small batch before any work', async () => {
  const ws = tempWorkspace();
  try {
    const cfg = cfgWith({ trainer: { batch_size: 3 }, stages: [{ name: 'g', algorithm: { name: 'grpo' }, steps: 2 }] });
    await assert.rejects(
      runJob({ config: cfg, workspace: ws, runId: 'bad' }),
      /field 'trainer\.batch_size': 3 rows leave 3 for rollouts.*Fix: set trainer\.batch_size to 4\./,
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

/** Usual and expert rows each trainer step of the run consumed. */
async function trained(runDir: string, runId: string, steps: number): Promise<{ usual: number; expert: number }[]> {
  const store = await openStore(join(runDir, 'buffer.db'));
  try {
    const out = [];
    for (let t = 0; t < steps; t++) {
      const rows = await store.getMany(await store.consumed('trainer', t, runId));
      out.push({
        usual: rows.filter((e) => e.source === 'usual').length,
        expert: rows.filter((e) => e.source === 'expert').length,
      });
    }
    return out;
  } finally {
    await store.close();
  }
}

// Lockstep memory, the overlapped memory explorer (one_step_off) and the explorer process (checkpoint).
const PLACEMENTS: [string, Record<string, unknown>][] = [
  [
    'memory, sync',
    { placement: 'memory', synchronizer: { sync_offset: 0 }, buffer: { storage: 'sqlite', max_staleness: 0 } },
  ],
  [
    'memory, one_step_off',
    {
      placement: 'memory',
      synchronizer: { schedule: 'one_step_off' },
      buffer: { storage: 'sqlite', max_staleness: 1 },
      explorer: { ...tinyConfig({ sync_offset: 0 }).explorer, workers: 1 },
    },
  ],
  [
    'checkpoint, sync',
    { placement: 'checkpoint', synchronizer: { sync_offset: 0 }, buffer: { storage: 'sqlite', max_staleness: 0 } },
  ],
];

for (const [name, placement] of PLACEMENTS) {
  test(`${name}: a GRPO stage trains its configured batch of 8 rollouts (two explore rounds of 4 a step)`, async () => {
    const ws = tempWorkspace();
    try {
      const cfg = cfgWith({
        ...placement,
        trainer: { batch_size: 8 },
        stages: [{ name: 'g', algorithm: { name: 'grpo' }, steps: STEPS }],
      });
      const s = await runJob({ config: cfg, workspace: ws, runId: 'b8' });
      assert.equal(s.trainer_steps, STEPS);
      const steps = await trained(s.run_dir, 'b8', STEPS);
      assert.deepEqual(
        steps,
        Array.from({ length: STEPS }, () => ({ usual: 8, expert: 0 })),
        JSON.stringify(steps),
      );
      // The refill rounds are counted in the explore records (8 or more experiences a step).
      // (one_step_off explores a step ahead: the run may end in the middle of that untrained one.)
      const explore = records(s.run_dir).filter((r) => r.kind === 'explore');
      assert.ok(
        explore.length >= STEPS && explore.slice(0, STEPS).every((r) => Number(r.experiences) >= 8),
        JSON.stringify(explore.map((r) => r.experiences)),
      );
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
}

test('memory, sync: a MIX stage with batch_size 12 trains 6 expert rows and 6 rollouts a step', async () => {
  const ws = tempWorkspace();
  try {
    const cfg = cfgWith({
      ...PLACEMENTS[0]![1],
      stages: [{ name: 'm', algorithm: { name: 'mix' }, steps: STEPS, batch_size: 12 }],
    });
    const s = await runJob({ config: cfg, workspace: ws, runId: 'm12' });
    assert.deepEqual(
      await trained(s.run_dir, 'm12', STEPS),
      Array.from({ length: STEPS }, () => ({ usual: 6, expert: 6 })),
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('memory, sync: a MIX batch whose expert share exceeds the expert rows cycles through them (8 demonstrations, 10 expert rows a step)', async () => {
  const ws = tempWorkspace();
  try {
    // Before: refused at the stage start ("its expert share ... is 10 rows a step, and the buffer has 8").
    const cfg = cfgWith({
      ...PLACEMENTS[0]![1],
      stages: [{ name: 'm', algorithm: { name: 'mix' }, steps: STEPS, batch_size: 20 }],
    });
    const s = await runJob({ config: cfg, workspace: ws, runId: 'm20' });
    assert.equal(s.trainer_steps, STEPS);
    assert.deepEqual(
      await trained(s.run_dir, 'm20', STEPS),
      Array.from({ length: STEPS }, () => ({ usual: 10, expert: 10 })),
    );
    // The repeats are reported: 8 distinct rows of the 10, the first step into the set's second pass.
    const train = records(s.run_dir).filter((r) => r.kind === 'train');
    assert.deepEqual(
      train.map((r) => [r.expert_rows, r.expert_unique, r.expert_epoch]),
      [
        [10, 8, 2],
        [10, 8, 3],
      ],
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('distributed (PostgreSQL): a GRPO stage trains its configured batch of 8 rollouts (top-up jobs)', async (t) => {
  const pg = startPg();
  if ('skip' in pg) return t.skip(pg.skip);
  const ws = tempWorkspace();
  try {
    const url = pgSchemaUrl(pg.url);
    const cfg = cfgWith({
      placement: 'checkpoint',
      synchronizer: { sync_offset: 0 },
      buffer: { storage: 'postgres', max_staleness: 0 },
      trainer: { batch_size: 8 },
      stages: [{ name: 'g', algorithm: { name: 'grpo' }, steps: STEPS }],
    });
    await createDistributedRun(cfg, url, 'db8', join(ws, 'weights'));
    const stop = new AbortController();
    const explorer = distributedExplorer({ url, runId: 'db8', signal: stop.signal, leaseMs: 20_000 });
    try {
      assert.equal((await distributedTrainer({ url, runId: 'db8' })).done, true);
    } finally {
      stop.abort();
      await explorer;
    }
    const store = await openStore(url);
    try {
      for (let s = 0; s < STEPS; s++) {
        const rows = await store.getMany(await store.consumed('trainer', s, 'db8'));
        assert.equal(rows.filter((e) => e.source === 'usual').length, 8, `step ${s}`);
      }
    } finally {
      await store.close();
    }
  } finally {
    pg.stop();
    rmSync(ws, { recursive: true, force: true });
  }
});
