// Partial rollouts in a distributed run (PostgreSQL buffer and job queue, one trainer, two explorers
// leasing concurrently), on the long-output config of the partial-rollout run tests: no job gives a
// trajectory more than the per-step budget (every segment), trajectories that spanned several jobs are
// trained, partial rows never, and no trajectory is continued twice (each later segment was added by
// one continuation job, acked once by the worker that made it, and its chain has no gap). A chain
// broken by a hand edit of its rows is acked empty and counted, and the run still finishes.
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
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { continuationId } from '../../backend/coordinator/distributed/partial-jobs.js';
import { JobQueue, experienceId } from '../../backend/buffer/queue/job-queue.js';
import type { Experience } from '../../backend/core/types.js';
import { makeExp, pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
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
    const explorers = [0, 1].map(() =>
      distributedExplorer({ url, runId: 'pd', signal: stop.signal, leaseMs: 20_000, batch: 1 }),
    );
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
    const train = readFileSync(join(dir, 'out', 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r.kind === 'train');
    assert.equal(train.length, STEPS);
    for (const r of train) assert.equal(typeof r.stale_segment_tokens, 'number');
    for (const e of ex)
      assert.ok(
        e.partial.maxTrajectoryTokens <= BUDGET,
        `${e.worker}: ${e.partial.maxTrajectoryTokens} tokens in one job`,
      );
    assert.ok(ex.reduce((a, e) => a + e.partial.continued, 0) > 0, 'trajectories were continued');
    t.diagnostic(
      ex
        .map(
          (e) =>
            `${e.worker}: ${e.jobs} jobs, continued ${e.partial.continued}, finished ${e.partial.finished}, refused ${JSON.stringify(e.refused)}`,
        )
        .join('; '),
    );

    // The job table: which lease acked each job.
    const { connectionString, schema } = parsePostgresUrl(url);
    const c = new pg.Client({ connectionString, options: `-c search_path=${schema}` });
    await c.connect();
    const jobs = new Map<string, { state: string; ackedBy: string | null; attempts: number }>();
    try {
      for (const r of (await c.query(`SELECT id, state, acked_by, attempts FROM rft_jobs WHERE run_id = 'pd'`))
        .rows as Record<string, unknown>[])
        jobs.set(String(r.id), {
          state: String(r.state),
          ackedBy: r.acked_by === null ? null : String(r.acked_by),
          attempts: Number(r.attempts),
        });
    } finally {
      await c.end();
    }
    assert.ok(
      [...jobs.keys()].some((id) => id.includes('~c')),
      'continuation jobs were queued',
    );
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
          if (i > 0)
            assert.ok(s.version >= segs[i - 1]!.version, `${e.id}: segment versions ${segs.map((x) => x.version)}`);
          assert.ok(s.end - s.start <= BUDGET, `${e.id}: ${s.end - s.start} tokens in one job (budget ${BUDGET})`);
          at = s.end;
        }
        assert.equal(at, e.responseTokens.length, `${e.id}: segments do not cover the response`);
        // Each segment after the first was added by one continuation job of its own group, acked by the worker that made it.
        const root = String(e.metadata?.job);
        byRoot.set(root, (byRoot.get(root) ?? 0) + 1);
        const by = (e.metadata?.continued_by as { job: string; attempt: number; worker: string }[] | undefined) ?? [];
        assert.equal(
          by.length,
          Math.max(0, segs.length - 1),
          `${e.id}: ${segs.length} segments, ${by.length} continuations`,
        );
        assert.equal(new Set(by.map((b) => b.job)).size, by.length, `${e.id}: continued twice by one job`);
        by.forEach((b, i) => {
          assert.ok(b.job.startsWith(root + '~c'), `${e.id}: continued by ${b.job}, not a job of its group ${root}`);
          const j = jobs.get(b.job);
          assert.equal(j?.state, 'done', `${b.job} not acked`);
          assert.equal(
            j?.ackedBy,
            b.worker,
            `${e.id}: segment ${i + 1} made by ${b.worker}, ${b.job} acked by ${j?.ackedBy}`,
          );
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

test('distributed: a continuation whose partial rows were edited away is acked empty and counted (broken_chain), the step topped up, the run finishes', async (t) => {
  const server = startPg();
  if ('skip' in server) return t.skip(server.skip);
  const dir = mkdtempSync(join(tmpdir(), 'rft-partial-broken-'));
  try {
    const url = pgSchemaUrl(server.url);
    const cfg = partialConfig('checkpoint');
    await createDistributedRun(cfg, url, 'pb', join(dir, 'weights'));
    // The queue as a lost explorer left it: job 0:0 acked as two partial rows with its continuation
    // 0:0~c1; then a hand edit of the buffer deletes one row and marks the other invalid.
    const { connectionString, schema } = parsePostgresUrl(url);
    const c = new pg.Client({ connectionString, options: `-c search_path=${schema}` });
    await c.connect();
    const q = await JobQueue.open(url);
    const ids = [0, 1].map((i) => experienceId('pb', '0:0', i));
    try {
      const [job] = await q.lease('pb', 'lost-explorer', 0, 1, 60_000);
      assert.equal(job!.id, '0:0');
      const rows = ids.map((id) => {
        const e = makeExp(id, {
          runId: 'pb',
          taskId: job!.task.id,
          groupId: 'pb:job:0:0',
          status: 'partial',
          reward: 0,
        });
        const responseTokens = e.responseTokens.slice(0, BUDGET);
        return {
          ...e,
          responseTokens,
          actionMask: responseTokens.map(() => 1),
          logprobs: e.logprobs.slice(0, BUDGET),
          segments: [{ version: 0, start: 0, end: BUDGET, step: 0 }],
          metadata: { partial: { finished: false, task: job!.task } },
        };
      });
      const next = { id: '0:0~c1', target: 0, requiredVersion: 0, task: job!.task, continues: ids };
      assert.deepEqual(await q.ack('pb', job!, 'lost-explorer', 0, 1, rows, { next }), { ok: true, inserted: 2 });
      await c.query(`DELETE FROM experiences WHERE id = $1`, [ids[0]]);
      await c.query(`UPDATE experiences SET status = 'invalid' WHERE id = $1`, [ids[1]]);
    } finally {
      await q.close();
    }

    const stop = new AbortController();
    const stopTrainer = new AbortController();
    // An explorer that fails stops the trainer too (it would otherwise wait for the group forever).
    const explorer = distributedExplorer({ url, runId: 'pb', signal: stop.signal, leaseMs: 20_000, batch: 1 }).catch(
      (e: unknown) => {
        stopTrainer.abort();
        throw e;
      },
    );
    let tr;
    try {
      tr = await distributedTrainer({ url, runId: 'pb', outDir: join(dir, 'out'), signal: stopTrainer.signal });
    } finally {
      stop.abort();
    }
    const ex = await explorer;
    assert.equal(ex.dropped.broken_chain, 1, 'the broken continuation was counted once');
    assert.equal(tr.done, true);
    assert.equal(tr.step, STEPS);
    assert.ok(tr.topUps >= 1, 'the group that never arrived was topped up');
    try {
      const job = (
        await c.query(`SELECT state, experiences, acked_by FROM rft_jobs WHERE run_id = 'pb' AND id = '0:0~c1'`)
      ).rows[0] as Record<string, unknown>;
      assert.deepEqual(
        [job.state, Number(job.experiences), job.acked_by],
        ['done', 0, ex.worker],
        'acked empty by the explorer',
      );
      assert.equal(
        (await c.query(`SELECT COUNT(*) AS n FROM rft_jobs WHERE run_id = 'pb' AND id LIKE '0:0~c%'`)).rows[0].n,
        '1',
        'no further continuation',
      );
      // Nothing deleted or revived: the edited row stays as the edit left it, never trained.
      const left = (await c.query(`SELECT id, status, use_count FROM experiences WHERE id = ANY($1::text[])`, [ids]))
        .rows as Record<string, unknown>[];
      assert.deepEqual(
        left.map((r) => [r.id, r.status, Number(r.use_count)]),
        [[ids[1], 'invalid', 0]],
      );
    } finally {
      await c.end();
    }
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
