// The distributed trainer's metrics.jsonl, kept with the run in the database (issue 24 item 8). A
// trainer that resumes on another machine (an object-store run moved, a new host) used to start an
// empty metrics.jsonl there, so its learning curve, report and summary covered only the steps after
// the move. Now every record also goes to the run's rft_run_metrics table (fenced by the trainer's
// lease), and a starting trainer writes its local metrics.jsonl from the stored records first.
import { appendFileSync, existsSync, renameSync, writeFileSync } from 'node:fs';
import type { RunMetricRow } from '../../buffer/storage/postgres.js';
import { withRetry, type RetryOptions } from '../../buffer/queue/retry.js';
import { MetricsLog, type MetricRecord } from '../monitor.js';
import type { EventFileWriter } from '../tensorboard.js';

/** What the log needs of the run's database (PostgresStore). */
export interface RunMetricsDb {
  appendRunMetrics(runId: string, rows: RunMetricRow[]): Promise<void>;
  resumeRunMetrics(runId: string, version: number): Promise<RunMetricRow[]>;
}

/** Records a resume from checkpoint VERSION writes again: train steps >= version, evaluations past it. */
export function redoneAfterResume(r: { kind: string; step?: unknown }, version: number): boolean {
  const step = typeof r.step === 'number' ? r.step : undefined;
  if (step === undefined) return false;
  return (r.kind === 'train' && step >= version) || (r.kind === 'eval' && step > version);
}

export class RunMetricsLog extends MetricsLog {
  private pending: RunMetricRow[] = [];
  private chain: Promise<void> = Promise.resolve();
  private failed: unknown = null;

  private constructor(
    file: string,
    private readonly db: RunMetricsDb,
    private readonly runId: string,
    private seq: number,
    /** The records of the run before this trainer started (from the database). */
    readonly restored: MetricRecord[],
    private readonly retry: RetryOptions,
    tensorboard?: EventFileWriter,
  ) {
    super(file, tensorboard);
  }

  /**
   * The run's records as stored (those past checkpoint VERSION dropped: they are trained again), or,
   * for a run that stored none yet (set up before the records were kept), this host's metrics.jsonl,
   * which is then stored. FILE is rewritten with them: it is this program's record of the run.
   */
  static async open(
    file: string,
    db: RunMetricsDb,
    runId: string,
    version: number,
    retry: RetryOptions = {},
    tensorboard?: EventFileWriter,
  ): Promise<RunMetricsLog> {
    let rows = await withRetry(() => db.resumeRunMetrics(runId, version), retry);
    if (!rows.length && existsSync(file)) {
      rows = new MetricsLog(file)
        .read()
        .filter((r) => !redoneAfterResume(r, version))
        .map((record, seq) => ({ seq, record }));
      await withRetry(() => db.appendRunMetrics(runId, rows), retry);
    }
    const tmp = `${file}.tmp-${process.pid}`;
    writeFileSync(tmp, rows.map((r) => JSON.stringify(r.record) + '\n').join(''));
    renameSync(tmp, file);
    const next = rows.length ? rows.at(-1)!.seq + 1 : 0;
    const log = new RunMetricsLog(
      file,
      db,
      runId,
      next,
      rows.map((r) => r.record as MetricRecord),
      retry,
      tensorboard,
    );
    // This host's event file holds the whole curve too (a trainer moved to an empty machine): it
    // restarts at step 0, so TensorBoard drops what earlier files of this folder said, then replays.
    if (tensorboard) {
      tensorboard.restartAt(0);
      for (const r of log.restored) log.toTensorboard(r);
    }
    return log;
  }

  override write(rec: Omit<MetricRecord, 't'>): void {
    const full = { t: Date.now(), ...rec } as MetricRecord;
    appendFileSync(this.file, JSON.stringify(full) + '\n');
    this.toTensorboard(full);
    this.pending.push({ seq: this.seq++, record: full });
    // One insert at a time, in order; records written meanwhile go in the next one.
    this.chain = this.chain
      .then(async () => {
        const batch = this.pending.splice(0);
        if (batch.length && this.failed === null)
          await withRetry(() => this.db.appendRunMetrics(this.runId, batch), this.retry);
      })
      .catch((e: unknown) => {
        this.failed ??= e;
      });
  }

  /** Waits until every record written so far is stored; throws what a store failed with (a fenced trainer's error). */
  async flush(): Promise<void> {
    await this.chain;
    if (this.failed !== null) throw this.failed;
  }
}
