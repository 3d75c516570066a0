// Tables of the distributed mode, beside the buffer's own (same PostgreSQL schema): the job queue the
// explorers lease tasks from (SELECT ... FOR UPDATE SKIP LOCKED, leases with an expiry) and the
// workers' heartbeats. Created with IF NOT EXISTS so any process may be the first to open them.
export const QUEUE_DDL = `
  CREATE TABLE IF NOT EXISTS rft_jobs (
    run_id TEXT NOT NULL,
    id TEXT NOT NULL,
    seq BIGINT GENERATED ALWAYS AS IDENTITY,
    target INTEGER NOT NULL,
    required_version INTEGER NOT NULL,
    task TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'queued',
    lease_owner TEXT,
    lease_until DOUBLE PRECISION,
    attempts INTEGER NOT NULL DEFAULT 0,
    acked_by TEXT,
    acked_version INTEGER,
    acked_at DOUBLE PRECISION,
    experiences INTEGER,
    continues TEXT,
    PRIMARY KEY (run_id, id)
  );
  -- Partial rollouts: a continuation job names the stored partial rows of its group (JSON ids). Added
  -- to a table made before it only when missing (an ALTER would lock the queue on every open).
  DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'rft_jobs' AND column_name = 'continues') THEN
      ALTER TABLE rft_jobs ADD COLUMN continues TEXT;
    END IF;
  END $$;
  CREATE INDEX IF NOT EXISTS rft_jobs_pick ON rft_jobs (run_id, state, target, seq);
  -- Leasing reads only open jobs: this index stays as small as the open jobs however long the
  -- history of done ones grows (the lease query repeats its predicate, state <> 'done').
  CREATE INDEX IF NOT EXISTS rft_jobs_open ON rft_jobs (run_id, target, seq) WHERE state <> 'done';
  CREATE TABLE IF NOT EXISTS rft_workers (
    run_id TEXT NOT NULL,
    id TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    role TEXT NOT NULL,
    state TEXT NOT NULL,
    detail TEXT,
    model_version INTEGER,
    done INTEGER NOT NULL DEFAULT 0,
    throughput DOUBLE PRECISION NOT NULL DEFAULT 0,
    started_at DOUBLE PRECISION NOT NULL,
    last_heartbeat DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, id)
  );
  -- A run's starting weights (v0) by sha256, in chunks: the coordinator puts them here so a trainer on
  -- any machine can start without the coordinator's folder (later versions go the trainer's way).
  CREATE TABLE IF NOT EXISTS rft_weight_files (
    run_id TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    name TEXT NOT NULL,
    part INTEGER NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (run_id, sha256, name, part)
  );
`;

/** Server time in ms: leases and heartbeats use the database's clock, never a host's (clocks drift). */
export const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)`;

/** Channel on which the trainer announces a published checkpoint. */
export const WEIGHTS_CHANNEL = 'rft_weights';
