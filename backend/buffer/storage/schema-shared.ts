// Migration text both SQL backends share; each passes its own spelling of a float column.

/**
 * Schema 2: runs sharing one database are kept apart: batches are recorded per (run, consumer), and
 * takes filter by run through an index that leads with it. Batches recorded before stay readable as
 * run '' (they were taken without a run, which is how an unscoped reader still finds them).
 */
export function runScopedConsumption(floatType: 'REAL' | 'DOUBLE PRECISION'): string {
  return `
  CREATE TABLE consumption_v2 (
    run_id TEXT NOT NULL,
    consumer TEXT NOT NULL,
    step INTEGER NOT NULL,
    part TEXT NOT NULL,
    pos INTEGER NOT NULL,
    experience_id TEXT NOT NULL,
    at ${floatType} NOT NULL,
    PRIMARY KEY (run_id, consumer, step, part, pos)
  );
  INSERT INTO consumption_v2 (run_id, consumer, step, part, pos, experience_id, at)
    SELECT '', consumer, step, part, pos, experience_id, at FROM consumption;
  DROP TABLE consumption;
  ALTER TABLE consumption_v2 RENAME TO consumption;
  CREATE INDEX experiences_take_run ON experiences (run_id, trainable, source, use_count, model_version);
  `;
}

/** Schema 3: preference pairs (chosen, rejected) of one prompt, for DPO (backend/buffer/pairs.ts). */
export function preferencePairs(floatType: 'REAL' | 'DOUBLE PRECISION'): string {
  return `
  CREATE TABLE pairs (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    chosen_id TEXT NOT NULL,
    rejected_id TEXT NOT NULL,
    origin TEXT NOT NULL,
    created_at ${floatType} NOT NULL,
    use_count INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX pairs_take ON pairs (run_id, use_count, created_at);
  `;
}
