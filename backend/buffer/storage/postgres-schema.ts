// PostgreSQL schema, as numbered migrations (same tables and meaning as sqlite-schema.ts).
// Tasks carry lease columns so distributed explorers can lease them with SELECT ... FOR UPDATE SKIP LOCKED.
import { preferencePairs, runScopedConsumption } from './schema-shared.js';

export const POSTGRES_MIGRATIONS: string[] = [
  `
  CREATE TABLE experiences (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    group_id TEXT NOT NULL,
    source TEXT NOT NULL,
    status TEXT NOT NULL,
    split TEXT,
    model_version INTEGER NOT NULL,
    reward DOUBLE PRECISION NOT NULL,
    use_count INTEGER NOT NULL DEFAULT 0,
    last_used_at DOUBLE PRECISION,
    created_at DOUBLE PRECISION NOT NULL,
    priority DOUBLE PRECISION NOT NULL DEFAULT 1,
    rating DOUBLE PRECISION,
    rejected INTEGER NOT NULL DEFAULT 0,
    trainable INTEGER NOT NULL,
    prompt_text TEXT NOT NULL,
    response_text TEXT NOT NULL,
    arrays BYTEA NOT NULL,
    extra TEXT NOT NULL
  );
  CREATE INDEX experiences_take ON experiences (trainable, source, use_count, model_version);
  CREATE INDEX experiences_run ON experiences (run_id, seq);
  CREATE INDEX experiences_task ON experiences (task_id);
  CREATE INDEX experiences_group ON experiences (group_id);
  CREATE TABLE consumption (
    consumer TEXT NOT NULL,
    step INTEGER NOT NULL,
    part TEXT NOT NULL,
    pos INTEGER NOT NULL,
    experience_id TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (consumer, step, part, pos)
  );
  CREATE TABLE tasks (
    run_id TEXT NOT NULL,
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    taskset TEXT NOT NULL,
    body TEXT NOT NULL,
    lease_owner TEXT,
    lease_until DOUBLE PRECISION,
    attempts INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, id)
  );
  CREATE INDEX tasks_order ON tasks (run_id, seq);
  CREATE TABLE checkpoints (
    run_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    path TEXT NOT NULL,
    checksum TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, version)
  );
  CREATE TABLE run_state (
    run_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, key)
  );
  CREATE TABLE feedback_log (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    experience_id TEXT NOT NULL,
    who TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    action TEXT NOT NULL,
    before TEXT NOT NULL,
    after TEXT NOT NULL,
    undoes BIGINT,
    undone_by BIGINT
  );
  CREATE INDEX feedback_log_experience ON feedback_log (experience_id, id);
  `,
  // 2: batches recorded per (run, consumer); takes filter by run.
  runScopedConsumption('DOUBLE PRECISION'),
  // 3: preference pairs for DPO.
  preferencePairs('DOUBLE PRECISION'),
];
