// Task synthesis in a distributed run (PostgreSQL; in-process coordinator, trainer and explorer):
// the trainer synthesizes after each trained batch from its tasks, stores the accepted ones, and the
// jobs it plans for later steps take them, so explorers roll them out and the trainer trains on them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { validateRunConfig } from '../../backend/core/config.js';
import type { Task } from '../../backend/core/types.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';
import { startPg } from '../buffer/storage-helpers.js';

const STEPS = 6;

test(
  'distributed run: the trainer synthesizes, jobs carry the new tasks, explorers roll them out, the trainer trains on them',
  { timeout: 400_000 },
  async (t) => {
    const server = startPg();
    if ('skip' in server) return t.skip(server.skip);
    const dir = mkdtempSync(join(tmpdir(), 'rft-synth-dist-'));
    const db = new pg.Client({ connectionString: server.url });
    try {
      const { config: cfg, issues } = validateRunConfig({
        name: 'synth-dist',
        seed: 4,
        model: { size: 'tiny-0.4m', max_seq_len: 96 },
        tokenizer: { kind: 'char' },
        // 4 tasks, 2 a step: the shuffle's second epoch (step 2 on) draws from the grown list.
        taskset: {
          builtin: 'arith',
          size: 4,
          pipeline: [{ name: 'synthesize', proposer: 'augment', per_step: 2, max_total: 8 }],
        },
        eval: { builtin: 'arith', size: 4, split: 'eval' },
        workflow: { name: 'single_turn', reward: 'math_answer' },
        explorer: {
          tasks_per_step: 2,
          repeat_times: 2,
          sampling: { max_new_tokens: 3 },
          eval_sampling: { max_new_tokens: 3 },
        },
        trainer: { batch_size: 4, steps: STEPS },
        algorithm: { name: 'grpo' },
        buffer: { storage: 'postgres', max_staleness: 1 },
        placement: 'checkpoint',
        synchronizer: { sync_interval: 1, sync_offset: 1 },
      });
      assert.ok(cfg, JSON.stringify(issues));
      await createDistributedRun(cfg, server.url, 'sd', join(dir, 'weights'));
      const stop = new AbortController();
      const explorer = distributedExplorer({
        url: server.url,
        runId: 'sd',
        signal: stop.signal,
        leaseMs: 20_000,
        batch: 1,
      });
      let r;
      try {
        r = await distributedTrainer({ url: server.url, runId: 'sd' });
      } finally {
        stop.abort();
      }
      await explorer;
      assert.equal(r.done, true);
      const recs = readFileSync(join(r.outDir, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const rounds = recs.filter((x) => x.kind === 'synthesize');
      assert.ok(rounds.length >= 3, JSON.stringify(rounds));
      assert.equal(new Set(rounds.map((x) => x.step)).size, rounds.length, 'one round a step');
      await db.connect();
      const q = async (sql: string, p: unknown[] = []) => (await db.query(sql, p)).rows as Record<string, unknown>[];
      const stored = (await q(`SELECT body FROM tasks WHERE run_id = 'sd' ORDER BY seq`)).map(
        (x) => JSON.parse(String(x.body)) as Task,
      );
      const synth = stored.filter((x) => String(x.metadata?.origin) === 'synth:augment');
      assert.equal(synth.length, 8, 'max_total');
      for (const s of synth)
        assert.equal((await rewardFns.get('math_answer')(s, String(s.metadata?.reference))).details?.correct, 1);
      const ids = new Set(synth.map((s) => s.id));
      const jobs = (await q(`SELECT task FROM rft_jobs WHERE run_id = 'sd'`)).map(
        (j) => (JSON.parse(String(j.task)) as Task).id,
      );
      assert.ok(
        jobs.some((id) => ids.has(id)),
        `jobs took synthesized tasks: ${jobs.join(', ')}`,
      );
      const trained = await q(
        `SELECT e.task_id FROM consumption c JOIN experiences e ON e.id = c.experience_id WHERE c.run_id = 'sd' AND c.consumer = 'trainer'`,
      );
      assert.ok(
        trained.some((x) => ids.has(String(x.task_id))),
        'the trainer trained on rollouts of synthesized tasks',
      );
    } finally {
      await db.end().catch(() => undefined);
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
