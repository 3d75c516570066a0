// Two distributed runs at once in ONE PostgreSQL database and schema (no `?schema=`): each run's
// trainer must train only on its own explorers' experiences, its recorded batches must be its own
// (same consumer name, same step numbers), its jobs must carry only its own tasks, and its explorers
// must load only its own published weights. Before runs were scoped, the second trainer replayed the
// first run's recorded batches and FIFO handed it the other run's rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { startPg } from '../buffer/storage-helpers.js';

const STEPS = 4;
const TPS = 2;
const REPEAT = 4;

function config(dir: string, run: 'A' | 'B'): RunConfig {
  // Different tasks per run (the prompts name the run), so a job of the other run is recognisable.
  const words = Array.from({ length: 12 }, (_, i) => 'abcdefghijklmnop'.slice(i, i + 3));
  const file = join(dir, `tasks-${run}.jsonl`);
  writeFileSync(
    file,
    words
      .map((w, i) =>
        JSON.stringify({ key: `${run}${i}`, text: `${run} reverse: ${w}`, rev: [...w].reverse().join('') }),
      )
      .join('\n') + '\n',
  );
  const { config, issues } = validateRunConfig({
    name: `two-runs-${run}`,
    seed: run === 'A' ? 3 : 4,
    model: { size: 'tiny-0.4m', max_seq_len: 32 },
    tokenizer: { kind: 'char' },
    taskset: { path: file, format: { id_key: 'key', prompt_key: 'text', response_key: 'rev' } },
    eval: { path: file, format: { id_key: 'key', prompt_key: 'text', response_key: 'rev' } },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    explorer: { tasks_per_step: TPS, repeat_times: REPEAT, sampling: { max_new_tokens: 4 } },
    trainer: { batch_size: TPS * REPEAT, steps: STEPS },
    algorithm: { name: 'grpo' },
    buffer: { storage: 'postgres', max_staleness: 1 },
    placement: 'checkpoint',
    synchronizer: { sync_interval: 1, sync_offset: 1 },
  });
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}

test(
  "two concurrent runs in one database never see each other's tasks, experiences, batches or weights",
  { timeout: 300_000 },
  async (t) => {
    const server = startPg();
    if ('skip' in server) return t.skip(server.skip);
    const dir = mkdtempSync(join(tmpdir(), 'rft-two-runs-'));
    const url = server.url; // the same database AND schema for both runs
    const db = new pg.Client({ connectionString: url });
    try {
      for (const run of ['A', 'B'] as const)
        await createDistributedRun(config(dir, run), url, run, join(dir, 'weights'));
      const stop = new AbortController();
      const explorers = (['A', 'B'] as const).map((run) =>
        distributedExplorer({ url, runId: run, signal: stop.signal, leaseMs: 20_000, batch: 1 }),
      );
      let results;
      try {
        results = await Promise.all((['A', 'B'] as const).map((run) => distributedTrainer({ url, runId: run })));
      } finally {
        stop.abort();
      }
      const ex = await Promise.all(explorers);
      for (const r of results) {
        assert.equal(r.done, true);
        // Each trainer keeps its run's record: a line per step with its batch reward, and the evaluations.
        assert.equal(r.eval.start?.n, 12);
        assert.equal(r.eval.final?.n, 12);
        const recs = readFileSync(join(r.outDir, 'metrics.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { kind: string; step?: number; reward_mean?: number });
        assert.deepEqual(
          recs.filter((x) => x.kind === 'train').map((x) => x.step),
          [...Array(STEPS).keys()],
        );
        for (const x of recs.filter((x) => x.kind === 'train')) assert.equal(typeof x.reward_mean, 'number');
        assert.deepEqual(
          recs.filter((x) => x.kind === 'eval').map((x) => x.step),
          [0, STEPS],
        );
        assert.ok(existsSync(join(r.outDir, 'report.html')) && existsSync(join(r.outDir, 'summary.json')));
      }
      assert.notEqual(results[0]!.outDir, results[1]!.outDir);
      await db.connect();
      const q = async (sql: string, p: unknown[] = []) => (await db.query(sql, p)).rows as Record<string, unknown>[];
      for (const run of ['A', 'B']) {
        const other = run === 'A' ? 'B' : 'A';
        // Batches: recorded under this run, every step full, only this run's experiences, none twice.
        const batches = await q(
          `SELECT c.step, c.experience_id, e.run_id, e.extra FROM consumption c LEFT JOIN experiences e ON e.id = c.experience_id WHERE c.run_id = $1 AND c.consumer = 'trainer' ORDER BY c.step, c.pos`,
          [run],
        );
        assert.equal(batches.length, STEPS * TPS * REPEAT, `run ${run}: ${batches.length} trained rows`);
        assert.equal(
          new Set(batches.map((b) => b.experience_id)).size,
          batches.length,
          `run ${run}: an experience trained twice`,
        );
        for (const b of batches)
          assert.equal(
            b.run_id,
            run,
            `run ${run} step ${b.step} trained ${String(b.experience_id)} of run ${String(b.run_id)}`,
          );
        // Experiences: made from this run's tasks only.
        const exps = await q(`SELECT task_id, prompt_text FROM experiences WHERE run_id = $1`, [run]);
        assert.ok(exps.length >= batches.length);
        for (const e of exps) {
          assert.ok(String(e.task_id).startsWith(run), `run ${run} has an experience of task ${String(e.task_id)}`);
          assert.ok(
            String(e.prompt_text).includes(`${run} reverse:`) && !String(e.prompt_text).includes(`${other} reverse:`),
          );
        }
        // Jobs: only this run's tasks.
        for (const j of await q(`SELECT task FROM rft_jobs WHERE run_id = $1`, [run]))
          assert.ok((JSON.parse(String(j.task)) as { id: string }).id.startsWith(run));
        // Weights: every version this run recorded lies in its own folder, and its experiences were made
        // with versions of its own run (the other run's newest version is never reached here).
        const cks = await q(`SELECT version, path FROM checkpoints WHERE run_id = $1`, [run]);
        assert.equal(cks.length, STEPS + 1);
        for (const c of cks) assert.ok(String(c.path).startsWith(join(dir, 'weights', run)), String(c.path));
        const versions = await q(`SELECT DISTINCT model_version AS v FROM experiences WHERE run_id = $1`, [run]);
        for (const v of versions)
          assert.ok(Number(v.v) >= 0 && Number(v.v) <= STEPS, `run ${run}: version ${String(v.v)}`);
        // Same version numbers in both runs, different weights: every experience names the sha256 of the
        // weights that made it, and that is a version of its own run, never the other's.
        const own = new Map(
          (await q(`SELECT version, checksum FROM checkpoints WHERE run_id = $1`, [run])).map((c) => [
            String(c.checksum),
            Number(c.version),
          ]),
        );
        const theirs = new Set(
          (await q(`SELECT checksum FROM checkpoints WHERE run_id = $1`, [other])).map((c) => String(c.checksum)),
        );
        for (const e of await q(
          `SELECT id, model_version, extra FROM experiences WHERE run_id = $1 AND source = 'usual'`,
          [run],
        )) {
          const sha = (JSON.parse(String(e.extra)) as { metadata: { weights: string } }).metadata.weights;
          assert.ok(!theirs.has(sha), `run ${run}: ${String(e.id)} was made with run ${other}'s weights`);
          assert.equal(
            own.get(sha),
            Number(e.model_version),
            `run ${run}: ${String(e.id)} names weights ${sha.slice(0, 12)}, not its own v${String(e.model_version)}`,
          );
        }
      }
      // Each explorer worked only on its run's jobs (all acks accepted, none refused as lost or stale).
      for (const [i, run] of ['A', 'B'].entries()) {
        const acked = Number(
          (
            await q(`SELECT COUNT(*) AS n FROM rft_jobs WHERE run_id = $1 AND state = 'done' AND acked_by = $2`, [
              run,
              ex[i]!.worker,
            ])
          )[0]!.n,
        );
        assert.equal(acked, ex[i]!.jobs, `run ${run}: the explorer's acks are all in its own run`);
      }
      t.diagnostic(`explorers: ${ex.map((r) => `${r.worker} ${r.jobs} jobs`).join(', ')}`);
    } finally {
      await db.end().catch(() => undefined);
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
