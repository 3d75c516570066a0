// `rft status --buffer postgres://...`: the distributed runs of a database, which the workspace's
// registry (.rft/runs.json) never lists — `rft coordinator` may run anywhere and keeps nothing on
// disk, so `rft status` showed none (issue 24). One line per run: its state, newest version, jobs,
// trainer and explorers.
import pg from 'pg';
import type { JobQueue, WorkerRow } from '../../buffer/queue/job-queue.js';
import { parsePostgresUrl } from '../../buffer/storage/postgres.js';
import { SILENT_AFTER_S } from './wait-reason.js';
import { trainerLostLine } from './trainer-lost.js';

export interface DistributedRunStatus {
  runId: string;
  /** done: the trainer finished; training: a trainer reports; waiting: set up, no live trainer. */
  state: 'done' | 'training' | 'waiting';
  version: number | null;
  jobs: Record<string, number>;
  trainer: string | null;
  /** No live trainer and the run not done: when and where it was last heard of (its lease row). */
  trainerLost: string | null;
  explorers: { live: number; error: number; silent: number };
}

/** The run ids that have a distributed config stored (made by `rft coordinator`), oldest first. */
async function distributedRunIds(q: JobQueue): Promise<string[]> {
  const rows = await q.pool
    .query(`SELECT run_id FROM run_state WHERE key = 'dist:config' ORDER BY updated_at, run_id`)
    .catch((e: { code?: string }) => {
      if (e.code === '42P01') return { rows: [] }; // no run was ever made in this schema
      throw e;
    });
  return rows.rows.map((r: Record<string, unknown>) => String(r.run_id));
}

/** Whether URL's schema holds a distributed run's tables: status reads only, it never creates them (a mistyped schema stays absent). */
export async function hasRunTables(url: string): Promise<boolean> {
  const p = parsePostgresUrl(url);
  const c = new pg.Client({ connectionString: p.connectionString, connectionTimeoutMillis: 10_000 });
  await c.connect();
  try {
    const r = await c.query(`SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AS ok`, [
      `${p.schema}.run_state`,
      `${p.schema}.rft_jobs`,
    ]);
    return Boolean((r.rows[0] as { ok: boolean }).ok);
  } finally {
    await c.end();
  }
}

export async function distributedRuns(q: JobQueue): Promise<DistributedRunStatus[]> {
  const out: DistributedRunStatus[] = [];
  for (const runId of await distributedRunIds(q)) {
    const workers: WorkerRow[] = await q.workers(runId, { pruneAfterMs: Number.MAX_SAFE_INTEGER });
    const live = (w: WorkerRow) => w.ageS <= SILENT_AFTER_S && w.state !== 'stopped' && w.state !== 'done';
    const trainer = workers.find((w) => w.role === 'trainer' && live(w)) ?? null;
    const ex = workers.filter((w) => w.role === 'explorer' && w.state !== 'stopped' && w.state !== 'done');
    const done = (await q.getState(runId, 'dist:done')) !== null;
    out.push({
      runId,
      state: done ? 'done' : trainer ? 'training' : 'waiting',
      version: (await q.latestVersion(runId))?.version ?? null,
      jobs: await q.counts(runId),
      trainer: trainer ? `${trainer.id} (${trainer.state})` : null,
      trainerLost: trainer || done ? null : await trainerLostLine(q, runId),
      explorers: {
        live: ex.filter((w) => live(w) && w.state !== 'error').length,
        error: ex.filter((w) => live(w) && w.state === 'error').length,
        silent: ex.filter((w) => !live(w)).length,
      },
    });
  }
  return out;
}

export function formatDistributedRuns(runs: DistributedRunStatus[]): string {
  return runs
    .map((r) => {
      const jobs =
        Object.entries(r.jobs)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ') || 'none';
      const ex =
        `${r.explorers.live} explorer(s) at work` +
        (r.explorers.error ? `, ${r.explorers.error} in error` : '') +
        (r.explorers.silent ? `, ${r.explorers.silent} silent` : '');
      return `${r.runId.padEnd(40)} ${`distributed ${r.state}`.padEnd(22)} version ${r.version === null ? '-' : `v${r.version}`}  jobs ${jobs}  ${r.trainer ? `trainer ${r.trainer}` : (r.trainerLost ?? 'trainer none')}  ${ex}`;
    })
    .join('\n');
}
