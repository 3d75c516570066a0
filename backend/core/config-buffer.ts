// The run config's buffer section (core/config.ts puts the sections together): the storage, how stale
// a rollout the trainer may take, its sampler, and another run's rollouts to train from.
import { z } from 'zod';

export const bufferSection = z
  .object({
    storage: z.string().default('sqlite'),
    max_staleness: z.number().int().min(0).default(1),
    /** How the trainer reads rollouts (fifo, fresh, priority). Default: fresh (the newest rows within max_staleness first) with synchronizer.schedule async, fifo otherwise. */
    sampler: z.string().optional(),
    /**
     * Train on another run's rollouts (mode train, or the stages with mode train): its buffer.db (a
     * SQLite file), a PostgreSQL URL or a JSONL export (`rft buffer export`). Copied into this run's
     * buffer at its start (ids and groups prefixed with the source run, so runs sharing a database
     * stay apart); the trainer then reads them without the version bound of exploring stages, and a
     * stage that has no whole batch left says so and ends instead of waiting for rows nobody writes.
     */
    train_from: z
      .object({
        path: z.string().min(1),
        /** Only this run's rows (a database shared by runs); default: every run's there. */
        run: z.string().min(1).optional(),
        /** The version bound: rollouts sampled by model versions >= min_version of the source run (expert rows always). */
        min_version: z.number().int().min(0).default(0),
      })
      .strict()
      .optional(),
  })
  .strict()
  .default({});
