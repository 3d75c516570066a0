// Partial rollouts in a distributed run (PostgreSQL buffer and job queue, one trainer, two explorers
// leasing concurrently), on the long-output config of the partial-rollout run tests: no job gives a
// trajectory more than the per-step budget (every segment), trajectories that spanned several jobs are
// trained, partial rows never, and no trajectory is continued twice (each later segment was added by
// one continuation job, acked once by the worker that made it, and its chain has no gap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openStore } from '../../backend/buffer/storage/index.js';
import { parsePostgresUrl } from '../../backend/buffer/storage/postgres.js';
import { checkDistributedConfig, createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/distributed/trainer.js';
import { continuationId } from '../../backend/coordinator/distributed/partial-jobs.js';
import type { Experience } from '../../backend/core/types.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import { BUDGET, STEPS, partialConfig } from './partial-config.js';

test('continuation job ids: ID~c1, ID~c2, ...', () => {
  assert.equal(continuationId('3:1'), '3:1~c1');
  assert.equal(continuationId('3:1~c1'), '3:1~c2');
  assert.equal(continuationId('3:x0~c9'), '3:x0~c10');
});

test('distributed (PostgreSQL, 2 explorers): budget per job kept, multi-job trajectories trained, partial rows never, none continued twice', async (t) => {
  const server = startPg();
  if ('skip' in server) return t.skip(server.skip);
  const dir = mkdtempSync(join(tmpdir(), 'rft-partial-dist-'));
  try {
    const url = pgSchemaUrl(server.url);
    const cfg = partialConfig('checkpoint');
    assert.equal(checkDistributedConfig(cfg), null);
    await createDistributedRun(cfg, url, 'pd', join(dir, 'weights'));
    const stop = new AbortController();
    const explorers = [0, 1].map(() => distributedExplorer({ url, runId: 'pd', signal: stop.signal, leaseMs: 20_000, batch: 1 }));
    let tr;
    try {
      tr = await distributedTrainer({ url, runId: 'pd', outDir: join(dir, 'out') });
    } finally {
      stop.abort();
    }
    const ex = await Promise.all(explorers);
    assert.equal(tr.done, true);
    assert.equal(tr.step, STEPS);
    // loss_segments fresh: the trainer reports the masked tokens of each step, as in the local placements.
    const train = readFileSync(join(dir, 'out', 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>).filter((r) => r.kind === 'train');
    assert.equal(train.length, STEPS);
    for (const r of train) assert.equal(typeof r.stale_segment_tokens, 'number');
    for (const e of ex) assert.ok(e.partial.maxTrajectoryTokens <= BUDGET, `${e.worker}: ${e.partial.maxTrajectoryTokens} tokens in one job`);
    assert.ok(ex.reduce((a, e) => a + e.partial.continued, 0) > 0, 'trajectories were continued');
    t.diagnostic(ex.map((e) => `${e.worker}: ${e.jobs} jobs, continued ${e.partial.continued}, finished ${e.partial.finished}, refused ${JSON.stringify(e.refused)}`).join('; '));

    // The job table: which lease acked each job.
    const { connectionString, schema } = parsePostgresUrl(url);
    const c = new pg.Client({ connectionString, options: `-c search_path=${schema}` });
    await c.connect();
    const jobs = new Map<string, { state: string; ackedBy: string | null; attempts: number }>();
    try {
      for (const r of (await c.query(`SELECT id, state, acked_by, attempts FROM rft_jobs WHERE run_id = 'pd'`)).rows as Record<string, unknown>[])
        jobs.set(String(r.id), { state: String(r.state), ackedBy: r.acked_by === null ? null : String(r.acked_by), attempts: Number(r.attempts) });
    } finally {
      await c.end();
    }
    assert.ok([...jobs.keys()].some((id) => id.includes('~c')), 'continuation jobs were queued');
    // A chain has no gap: ID~cN exists only after ID~c(N-1) (or ID) was acked.
    for (const id of jobs.keys()) {
      const m = /^(.*)~c(\d+)$/.exec(id);
      if (!m) continue;
      const prev = Number(m[2]) === 1 ? m[1]! : `${m[1]}~c${Number(m[2]) - 1}`;
      assert.equal(jobs.get(prev)?.state, 'done', `${id} queued without ${prev} acked`);
    }

    const store = await openStore(url);
    try {
      const rows: Experience[] = await store.list({ runId: 'pd', source: 'usual', limit: 100_000 });
      assert.ok(rows.length > 0);
      const byRoot = new Map<string, number>();
      for (const e of rows) {
        // Segments: contiguous, covering the response, each one job's tokens (never over the budget).
        const segs = e.segments ?? [];
        if (e.responseTokens.length) assert.ok(segs.length > 0, `${e.id}: no segments`);
        let at = 0;
        for (const [i, s] of segs.entries()) {
          assert.equal(s.start, at, `${e.id}: segments not contiguous`);
          // Each continuation runs with the weights its explorer loaded, never older than the trajectory's last segment.
          if (i > 0) assert.ok(s.version >= segs[i - 1]!.version, `${e.id}: segment versions ${segs.map((x) => x.version)}`);
          assert.ok(s.end - s.start <= BUDGET, `${e.id}: ${s.end - s.start} tokens in one job (budget ${BUDGET})`);
          at = s.end;
        }
        assert.equal(at, e.responseTokens.length, `${e.id}: segments do not cover the response`);
        // Each segment after the first was added by one continuation job of its own group, acked by the worker that made it.
        const root = String(e.metadata?.job);
        byRoot.set(root, (byRoot.get(root) ?? 0) + 1);
        const by = (e.metadata?.continued_by as { job: string; attempt: number; worker: string }[] | undefined) ?? [];
        assert.equal(by.length, Math.max(0, segs.length - 1), `${e.id}: ${segs.length} segments, ${by.length} continuations`);
        assert.equal(new Set(by.map((b) => b.job)).size, by.length, `${e.id}: continued twice by one job`);
        by.forEach((b, i) => {
          assert.ok(b.job.startsWith(root + '~c'), `${e.id}: continued by ${b.job}, not a job of its group ${root}`);
          const j = jobs.get(b.job);
          assert.equal(j?.state, 'done', `${b.job} not acked`);
          assert.equal(j?.ackedBy, b.worker, `${e.id}: segment ${i + 1} made by ${b.worker}, ${b.job} acked by ${j?.ackedBy}`);
        });
      }
      // One row per sample of a group (a pipeline filter may drop some, none is duplicated).
      for (const [root, n] of byRoot) assert.ok(n <= cfg.explorer.repeat_times, `group ${root}: ${n} rows`);

      let multi = 0;
      let versions = 0;
      const seen = new Set<string>();
      for (let step = 0; step < STEPS; step++) {
        const batch = await store.getMany(await store.consumed('trainer', step, 'pd'));
        assert.ok(batch.length > 0, `step ${step} trained`);
        for (const e of batch) {
          assert.equal(e.status, 'ok', `step ${step}: ${e.id} is ${e.status}`);
          assert.equal(e.metadata?.partial, undefined);
          assert.ok(!seen.has(e.id), `${e.id} trained twice`);
          seen.add(e.id);
          if ((e.segments?.length ?? 0) > 1) multi++;
          if (new Set(e.segments?.map((s) => s.version)).size > 1) versions++;
        }
      }
      assert.ok(multi > 0, 'trajectories that spanned more than one job were trained on');
      t.diagnostic(`trained: ${seen.size} rows, ${multi} over several jobs, ${versions} over several weight versions`);
      // What is left unfinished stays as partial rows of the run, never taken.
      for (const e of await store.list({ runId: 'pd', status: 'partial', limit: 1000 })) assert.equal(e.useCount, 0);
    } finally {
      await store.close();
    }
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
