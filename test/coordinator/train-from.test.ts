// Issue 25 item 2: `mode: train` from another run's buffer (buffer.train_from): a SQLite buffer.db,
// a PostgreSQL URL or a JSONL export, with the user's version bound (min_version); a run that runs out of rows says so
// (an out_of_rows record) and ends instead of waiting, in the memory and checkpoint placements.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { exportJsonl, importJsonl } from '../../backend/buffer/storage/jsonl.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import { checkRunConfig } from '../../backend/coordinator/config-check.js';
import { checkDistributedConfig } from '../../backend/coordinator/distributed/setup.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { tinyConfig, tempWorkspace } from './tiny-config.js';

const ws = tempWorkspace();
after(() => rmSync(ws, { recursive: true, force: true }));
const BATCH = 4;

// The source: an exploring GRPO run whose buffer holds rollouts of versions 0..2.
const src = tinyConfig({ sync_offset: 0 }, 2, { stages: [{ name: 'grpo', algorithm: { name: 'grpo' }, steps: 3 }] });
src.placement = 'memory';
await runJob({ config: src, workspace: ws, runId: 'src' });
const srcDb = join(ws, '.rft', 'runs', 'src', 'buffer.db');
const srcRows = await (async () => {
  const s = await openStore(srcDb);
  try {
    return (await s.list({ runId: 'src', source: 'usual', limit: 10_000 })).filter((e) => e.status === 'ok');
  } finally {
    await s.close();
  }
})();

function trainConfig(trainFrom: Record<string, unknown>) {
  // 50 steps asked for: far more than the source's rows make, so the run must end on running out.
  return tinyConfig({ sync_offset: 0 }, 2, {
    mode: 'train',
    stages: undefined,
    algorithm: { name: 'grpo' },
    // Mode train explores nothing: the exploring fields stay at their defaults (config-reads.ts).
    explorer: { eval_sampling: { max_new_tokens: 4 } },
    trainer: { batch_size: BATCH, steps: 50 },
    buffer: { storage: 'sqlite', max_staleness: 0, train_from: trainFrom },
  });
}

function records(runId: string): Record<string, unknown>[] {
  return readFileSync(join(ws, '.rft', 'runs', runId, 'metrics.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Runs a train-only run and checks it trained each copied row once, then ended on running out of rows. */
async function trainsAll(
  runId: string,
  trainFrom: Record<string, unknown>,
  method: 'memory' | 'checkpoint',
  rows: number,
): Promise<void> {
  const cfg = trainConfig(trainFrom);
  cfg.placement = method;
  const summary = await runJob({ config: cfg, workspace: ws, runId });
  const steps = Math.floor(rows / BATCH);
  assert.ok(steps >= 1, `the source has ${rows} rows`);
  assert.equal(summary.trainer_steps, steps, `${rows} rows in batches of ${BATCH}`);
  const recs = records(runId);
  assert.equal(recs.filter((r) => r.kind === 'train').length, steps);
  const out = recs.filter((r) => r.kind === 'out_of_rows');
  assert.equal(out.length, 1, 'says it ran out of rows');
  assert.equal(out[0]!.ready, rows - steps * BATCH);
  assert.equal((await (await RunRegistry.open(ws)).get(runId))?.status, 'completed');
  const store = await openStore(join(ws, '.rft', 'runs', runId, 'buffer.db'));
  try {
    const used = new Set<string>();
    for (let t = 0; t < steps; t++)
      for (const id of await store.consumed('trainer', t, runId)) {
        assert.ok(!used.has(id), `${id} trained twice`);
        assert.ok(id.startsWith('src/'), `${id}: a copied row`);
        used.add(id);
      }
  } finally {
    await store.close();
  }
}

test('train_from a SQLite buffer.db (memory): every row trained once, then the run says it ran out and ends', async () => {
  await trainsAll('t-mem', { path: srcDb }, 'memory', srcRows.length);
});

test('train_from a SQLite buffer.db (checkpoint placement, child processes)', async () => {
  await trainsAll('t-proc', { path: srcDb }, 'checkpoint', srcRows.length);
});

test('train_from min_version: only rollouts of those versions, the source run chosen by run', async () => {
  const v = Math.max(...srcRows.map((e) => e.modelVersion));
  const bounded = srcRows.filter((e) => e.modelVersion >= v).length;
  assert.ok(bounded < srcRows.length, 'the bound leaves rows out');
  await trainsAll('t-min', { path: srcDb, run: 'src', min_version: v }, 'memory', bounded);
});

test('train_from a JSONL export', async () => {
  const file = join(ws, 'src.jsonl');
  const s = await openStore(srcDb);
  try {
    await exportJsonl(s, file, (e) => e.runId === 'src');
  } finally {
    await s.close();
  }
  await trainsAll('t-jsonl', { path: file }, 'memory', srcRows.length);
});

test('train_from a PostgreSQL URL (the source run chosen by run in a shared database)', async (t) => {
  const pg = startPg();
  if ('skip' in pg) return t.skip(pg.skip);
  try {
    const url = pgSchemaUrl(pg.url);
    const file = join(ws, 'src-pg.jsonl');
    const s = await openStore(srcDb);
    try {
      await exportJsonl(s, file, (e) => e.runId === 'src');
    } finally {
      await s.close();
    }
    const db = await openStore(url);
    try {
      await importJsonl(db, file);
    } finally {
      await db.close();
    }
    await trainsAll('t-pg', { path: url, run: 'src' }, 'memory', srcRows.length);
  } finally {
    pg.stop();
  }
});

test('train_from refused: a missing file by path, a run with no train stage, a distributed run, no row of the run; none in bound ends at once', async () => {
  await assert.rejects(
    runJob({ config: trainConfig({ path: join(ws, 'nope.db') }), workspace: ws, runId: 't-missing' }),
    (e: Error) => e.message.includes('no such file') && e.message.includes("field 'buffer.train_from.path'"),
  );
  const both = tinyConfig({ sync_offset: 0 }, 2, {
    buffer: { storage: 'sqlite', max_staleness: 0, train_from: { path: srcDb } },
  });
  assert.ok(checkRunConfig(both).some((i) => i.path === 'buffer.train_from'));
  assert.match(checkDistributedConfig(trainConfig({ path: srcDb })) ?? '', /^buffer\.train_from:/);
  await assert.rejects(
    runJob({ config: trainConfig({ path: srcDb, run: 'other' }), workspace: ws, runId: 't-none' }),
    /no rows to train on/,
  );
  // Expert rows only (no rollout within the bound): the rollout sampler has nothing, the run says so at once and ends.
  const r = await runJob({ config: trainConfig({ path: srcDb, min_version: 99 }), workspace: ws, runId: 't-bound' });
  assert.equal(r.trainer_steps, 0);
  assert.equal(records('t-bound').filter((x) => x.kind === 'out_of_rows').length, 1);
});
