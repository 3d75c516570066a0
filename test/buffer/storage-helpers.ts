// Test helpers for the buffer storage: deterministic experiences and a PostgreSQL server for the suite.
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Experience } from '../../backend/core/types.js';
import { Rng } from '../../backend/core/rng.js';
import Database from 'better-sqlite3';
import { ROW_COLUMNS, rowValues, toRow } from '../../backend/buffer/storage/codec.js';
import { parsePostgresUrl } from '../../backend/buffer/storage/postgres.js';
import { POSTGRES_MIGRATIONS } from '../../backend/buffer/storage/postgres-schema.js';
import { SQLITE_MIGRATIONS } from '../../backend/buffer/storage/sqlite-schema.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A realistic experience (~2 KB stored): 80 prompt tokens, 120 response tokens with log-probs. */
export function makeExp(id: string, over: Partial<Experience> = {}, seed = 1): Experience {
  const rng = new Rng(hash(id) ^ seed);
  const P = 80;
  const R = 120;
  const responseTokens = Array.from({ length: R }, () => rng.int(3, 32000));
  return {
    id,
    taskId: `task-${id}`,
    groupId: `group-${id}`,
    runId: 'run-1',
    source: 'usual',
    promptTokens: Array.from({ length: P }, () => rng.int(3, 32000)),
    promptText: `What is ${id}? `.repeat(4),
    responseTokens,
    responseText: `The answer for ${id} is 42. `.repeat(4),
    actionMask: responseTokens.map(() => 1),
    // Math.fround: log-probs from the tensor engine are float32 values.
    logprobs: responseTokens.map(() => Math.fround(-rng.next() * 5)),
    modelVersion: 0,
    reward: 1,
    status: 'ok',
    useCount: 0,
    createdAt: 1_700_000_000_000,
    ...over,
  };
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

export interface PgServer {
  url: string;
  stop(): void | Promise<void>;
}

/**
 * The PostgreSQL the tests use: RFT_TEST_PG_URL, or a throwaway cluster from scripts/pg-test-server.sh.
 * Returns a skip reason when none can start; under CI=true that is an error, never a silent skip.
 */
export function startPg(): PgServer | { skip: string } {
  const given = process.env.RFT_TEST_PG_URL;
  // On a server we did not start, drop the schemas the tests made.
  if (given) return { url: given, stop: () => dropSchemas(given) };
  const r = spawnSync('bash', [join(root, 'scripts', 'pg-test-server.sh'), 'start'], { encoding: 'utf8' });
  if (r.status !== 0) {
    const why = `PostgreSQL test server did not start (scripts/pg-test-server.sh exit ${r.status}): ${(r.stderr || r.error?.message || '').trim().slice(-400)}`;
    if (process.env.CI === 'true' || process.env.CI === '1')
      throw new Error(why + ' — CI requires PostgreSQL (apt-get install -y postgresql)');
    return { skip: why };
  }
  const [url, dir] = r.stdout.trim().split('\n');
  return {
    url: url!,
    stop: () =>
      void spawnSync('bash', [join(root, 'scripts', 'pg-test-server.sh'), 'stop', dir!], { encoding: 'utf8' }),
  };
}

const made: string[] = [];

/** A fresh schema on the server: each test gets its own tables. */
export function pgSchemaUrl(base: string): string {
  const u = new URL(base);
  const schema = `t_${randomBytes(6).toString('hex')}`;
  made.push(schema);
  u.searchParams.set('schema', schema);
  return u.toString();
}

async function dropSchemas(url: string): Promise<void> {
  if (!made.length) return;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    for (const s of made.splice(0)) await c.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  } finally {
    await c.end();
  }
}

/**
 * A buffer as schema version 1 wrote it (before runs were kept apart): its tables, experiences and
 * recorded batches, written with that version's SQL only, to check that the migration keeps them.
 */
export async function writeSchema1Buffer(
  url: string,
  exps: Experience[],
  batches: { consumer: string; step: number; ids: string[] }[],
): Promise<void> {
  const pgUrl = /^postgres(ql)?:/.test(url);
  const stmts: [string, unknown[]][] = [
    ['CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)', []],
    ['INSERT INTO schema_version (version, applied_at) VALUES (1, 0)', []],
  ];
  const ph = (i: number) => (pgUrl ? `$${i}` : '?');
  for (const e of exps) {
    const vals = rowValues(toRow(e));
    stmts.push([
      `INSERT INTO experiences (${ROW_COLUMNS.join(', ')}) VALUES (${vals.map((_, i) => ph(i + 1)).join(', ')})`,
      vals,
    ]);
  }
  for (const b of batches)
    b.ids.forEach((id, pos) =>
      stmts.push([
        `INSERT INTO consumption (consumer, step, part, pos, experience_id, at) VALUES (${[1, 2, 3, 4, 5, 6].map(ph).join(', ')})`,
        [b.consumer, b.step, 'main', pos, id, 1],
      ]),
    );
  if (!pgUrl) {
    const path = url.replace(/^sqlite:(\/\/)?/, '');
    mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    try {
      db.exec(SQLITE_MIGRATIONS[0]!);
      for (const [sql, p] of stmts) db.prepare(sql).run(...p);
    } finally {
      db.close();
    }
    return;
  }
  const p = parsePostgresUrl(url);
  const c = new pg.Client({ connectionString: p.connectionString });
  await c.connect();
  try {
    await c.query(`CREATE SCHEMA IF NOT EXISTS ${p.schema}`);
    await c.query(`SET search_path = ${p.schema}`);
    await c.query(POSTGRES_MIGRATIONS[0]!);
    for (const [sql, params] of stmts) await c.query(sql, params);
  } finally {
    await c.end();
  }
}
