// Issue 24 item 8: a distributed trainer that resumes on another machine wrote a fresh metrics.jsonl
// there, so the learning curve, report and summary covered only the steps after the move. The run's
// metric records now live in its database (rft_run_metrics, written by the lease holder only): the
// second trainer, with an empty output folder and its own weights folder, writes the whole curve,
// each step once (records of steps the resume trains again are dropped), and the summary counts the
// whole run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { parsePostgresUrl } from '../../backend/buffer/storage/postgres.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import { tinyConfig } from './tiny-config.js';

type Rec = { kind: string; step?: number; stage?: string; component?: string };
const records = (file: string): Rec[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as Rec)
    : [];

test('a distributed trainer resumed on another machine writes the whole learning curve, report and summary', async (t) => {
  const server = startPg();
  if ('skip' in server) return t.skip(server.skip);
  const dir = mkdtempSync(join(tmpdir(), 'rft-dist-metrics-'));
  const MIX = 6;
  try {
    const url = pgSchemaUrl(server.url);
    await createDistributedRun(
      tinyConfig({ sync_offset: 0 }, MIX, { monitor: { eval_every: 2 } }),
      url,
      'mr',
      join(dir, 'weights-a'),
    );
    const stopEx = new AbortController();
    const explorer = distributedExplorer({ url, runId: 'mr', signal: stopEx.signal, leaseMs: 20_000 });
    try {
      // Machine A trains the warm-up and two MIX steps, then stops.
      const outA = join(dir, 'out-a');
      const stopA = new AbortController();
      const a = distributedTrainer({ url, runId: 'mr', outDir: outA, serveWeights: false, signal: stopA.signal });
      const aEnded = a.then(
        () => true,
        () => true,
      );
      while (records(join(outA, 'metrics.jsonl')).filter((r) => r.kind === 'train' && r.stage === 'mix').length < 2) {
        if (await Promise.race([aEnded, new Promise((r) => setTimeout(r, 20, false))])) break;
      }
      stopA.abort();
      const resA = await a;
      assert.equal(resA.done, false, 'A was stopped before the end');
      const stepsA = records(join(outA, 'metrics.jsonl')).filter((r) => r.kind === 'train').length;
      assert.ok(stepsA >= 3, `A trained the warm-up and some MIX steps (${stepsA})`);

      // Machine B: another output and weights folder, nothing of A's on its disk but the checkpoints it fetches.
      const outB = join(dir, 'out-b');
      const resB = await distributedTrainer({
        url,
        runId: 'mr',
        outDir: outB,
        weightsDir: join(dir, 'weights-b'),
        serveWeights: false,
      });
      assert.equal(resB.done, true);
      assert.equal(resB.step, 2 + MIX);
      assert.ok(resB.startedFrom >= 2, `B resumed past the warm-up (v${resB.startedFrom})`);
      t.diagnostic(`A trained ${stepsA} step(s), B resumed from v${resB.startedFrom}`);

      // The whole curve on B: every step 0 .. 2+MIX-1 exactly once, the warm-up (trained on A) included.
      const recs = records(join(outB, 'metrics.jsonl'));
      const trainSteps = recs.filter((r) => r.kind === 'train').map((r) => r.step);
      assert.deepEqual(
        trainSteps,
        Array.from({ length: 2 + MIX }, (_, i) => i),
      );
      assert.equal(recs.filter((r) => r.kind === 'stage').length, 2, 'both stage starts');
      // Periodic evaluations of both machines, each once, and the summary lists them all.
      const periodic = recs.filter((r) => r.kind === 'eval' && r.component === 'trainer').map((r) => r.step!);
      assert.equal(new Set(periodic).size, periodic.length, `no evaluation twice: ${periodic}`);
      assert.ok(
        periodic.some((s) => s <= resB.startedFrom),
        `an evaluation made on A is in B's curve: ${periodic}`,
      );
      const summary = JSON.parse(readFileSync(join(outB, 'summary.json'), 'utf8')) as {
        trainer_steps: number;
        explore_steps: number;
        evals: { stage: string; step: number }[];
      };
      assert.equal(summary.trainer_steps, 2 + MIX);
      assert.equal(summary.explore_steps, MIX, 'every MIX step, on either machine');
      for (const s of periodic)
        assert.ok(
          summary.evals.some((e) => e.step === s),
          `summary lists the evaluation at v${s}`,
        );
      // The start evaluation was made on A: B's summary lists it once, with B's final one.
      assert.equal(summary.evals.filter((e) => e.stage === 'start').length, 1, JSON.stringify(summary.evals));
      assert.equal(summary.evals.filter((e) => e.stage === 'final').length, 1);
      // The report's chart data covers step 0 (trained on A).
      assert.ok(existsSync(join(outB, 'report.html')));
      // The summary lives with the run too.
      const p = parsePostgresUrl(url);
      const c = new pg.Client({ connectionString: p.connectionString, options: `-c search_path=${p.schema}` });
      await c.connect();
      try {
        const stored = JSON.parse(
          String(
            (await c.query(`SELECT value FROM run_state WHERE run_id = 'mr' AND key = 'dist:summary'`)).rows[0]!.value,
          ),
        ) as { trainer_steps: number; explore_steps: number };
        assert.deepEqual([stored.trainer_steps, stored.explore_steps], [2 + MIX, MIX]);
        const n = Number(
          (await c.query(`SELECT count(*) AS n FROM rft_run_metrics WHERE run_id = 'mr' AND kind = 'train'`)).rows[0]!
            .n,
        );
        assert.equal(n, 2 + MIX, 'the database holds each step once');
      } finally {
        await c.end();
      }
    } finally {
      stopEx.abort();
      await explorer.catch(() => undefined);
    }
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
