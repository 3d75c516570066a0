// buffer.train_from: a run that trains on another run's rollouts. The source (a buffer.db, a
// PostgreSQL URL, a JSONL export, or the same rows as Parquet / Arrow) is copied into this run's own buffer once, at its start: the
// sampler then records its batches in this run's buffer (a resume replays them), never in the
// source's. The version bound is the user's (min_version, of the source run's model versions), not
// the trainer's version minus max_staleness: those rows were sampled by another run's weights.
import { existsSync, statSync } from 'node:fs';
import type { RunConfig } from '../core/config.js';
import type { Experience } from '../core/types.js';
import { InputError } from '../core/errors.js';
import { logger } from '../core/log.js';
import { openStore } from '../buffer/storage/index.js';
import type { ExperienceStore } from '../buffer/storage/types.js';
import { BatchAppender, readJsonlExperiences, scanRows } from '../buffer/storage/jsonl.js';
import { readColumnarExperiences } from '../buffer/storage/columnar.js';
import { formatByExtension } from '../core/taskset-text/index.js';

const log = logger('train-from');

export type TrainFrom = NonNullable<RunConfig['buffer']['train_from']>;

export interface TrainFromResult {
  /** Rows copied now, rows already there (a resumed run), rows left out by run or version. */
  imported: number;
  present: number;
  skipped: number;
}

/** Every row of the source, in its order (seq for a database, line order for a JSONL file). */
async function* sourceRows(tf: TrainFrom): AsyncGenerator<Experience> {
  const p = tf.path;
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(p);
  // A missing file would be created empty by SQLite: refused by path instead.
  if (!url && (!existsSync(p) || !statSync(p).isFile()))
    throw new InputError(`no such file (a run's buffer.db, a JSONL / Parquet / Arrow export or a database URL)`, {
      field: 'buffer.train_from.path',
      file: p,
    });
  const columnar = url ? undefined : formatByExtension(p);
  if (columnar === 'parquet' || columnar === 'arrow' || (!url && /\.jsonl$/i.test(p))) {
    // A bad line (row) refuses the source by file and line (a run would otherwise train on part of it).
    const rows =
      columnar === 'parquet' || columnar === 'arrow' ? readColumnarExperiences(p, columnar) : readJsonlExperiences(p);
    for await (const row of rows) {
      if (row instanceof InputError) throw row;
      yield row;
    }
    return;
  }
  const src = await openStore(p);
  try {
    yield* scanRows(src, tf.run);
  } finally {
    await src.close();
  }
}

/** Whether a source row is one the run trains on: the run asked for, usual rows within the version bound, expert rows. */
export function takesRow(tf: TrainFrom, e: Experience): boolean {
  if (tf.run !== undefined && e.runId !== tf.run) return false;
  if (e.source === 'usual') return e.modelVersion >= tf.min_version;
  return e.source === 'expert';
}

/**
 * The ids a row's metadata names (an expert copy's `promotedFrom`, long2short's `chosen`) with the
 * prefix the copied rows get, so the pairs they make (buffer/pairs.ts) hold in the copy too.
 */
function prefixedRefs(m: Record<string, unknown>, prefix: string): Record<string, unknown> {
  const out = { ...m };
  if (typeof m.promotedFrom === 'string') out.promotedFrom = prefix + m.promotedFrom;
  const l2s = m.long2short as { chosen?: unknown } | undefined;
  if (l2s && typeof l2s === 'object' && typeof l2s.chosen === 'string')
    out.long2short = { ...l2s, chosen: prefix + l2s.chosen };
  return out;
}

/**
 * Copy the source's rows into `store` under `runId`. Ids and group ids get the source run as a
 * prefix (runs sharing a database stay apart; a group stays one group), use counts start at 0.
 * Idempotent: a resumed run finds its rows present. A source with nothing to train on is refused.
 */
export async function importTrainFrom(store: ExperienceStore, runId: string, tf: TrainFrom): Promise<TrainFromResult> {
  let skipped = 0;
  const out = new BatchAppender(store);
  for await (const e of sourceRows(tf)) {
    if (!takesRow(tf, e)) {
      skipped++;
      continue;
    }
    await out.push({
      ...e,
      id: `${e.runId}/${e.id}`,
      groupId: `${e.runId}/${e.groupId}`,
      runId,
      useCount: 0,
      ...(e.metadata ? { metadata: prefixedRefs(e.metadata, `${e.runId}/`) } : {}),
    });
  }
  await out.flush();
  const res: TrainFromResult = { imported: out.inserted, present: out.duplicates, skipped };
  if (res.imported + res.present === 0)
    throw new InputError(
      `no rows to train on (${res.skipped} left out: ${tf.run !== undefined ? `run ${tf.run}, ` : ''}usual rows need model_version >= min_version ${tf.min_version})`,
      { field: 'buffer.train_from', file: tf.path },
    );
  log.info(
    `buffer.train_from ${tf.path}: ${res.imported} rows copied into run ${runId}${res.present ? `, ${res.present} there already` : ''}${res.skipped ? `, ${res.skipped} left out (run / min_version ${tf.min_version})` : ''}`,
  );
  return res;
}
