// The one entry signature of the placements runJob (run.ts) hands a run to: in-process.ts
// (placement memory), child-processes.ts (placement checkpoint) and explore-bench.ts (modes
// explore and bench, no trainer). Each takes the run as runJob opened it. The distributed
// placement (distributed.ts) is not started by runJob: `rft trainer` (cli/commands/trainer.ts)
// starts its trainer on a run that `rft coordinator` created in the database, with its own options.
import { join } from 'node:path';
import type { RunConfig } from '../../core/config.js';
import type { CheckpointMeta } from '../../model/checkpoint.js';
import type { RunRegistry } from '../../buffer/runs.js';
import type { MetricsLog } from '../monitor.js';
import type { RunOptions, RunSummary } from '../run-types.js';
import type { RunContext } from '../run-loop.js';
import type { TaskPools } from '../setup/tasks.js';
import type { RunState } from '../run-state.js';

/** A run as runJob opened it: its record (id, folder, buffer), registry, metrics log and start time. */
export interface PlacementContext {
  opts: RunOptions;
  cfg: RunConfig;
  runId: string;
  runDir: string;
  dbPath: string;
  registry: RunRegistry;
  metrics: MetricsLog;
  t0: number;
  /** A resumed run (`rft resume`). */
  resumed: boolean;
  /** A resumed run's newest checkpoint, when it has one (the in-process placement starts from it). */
  resumeFrom?: { dir: string; meta: CheckpointMeta };
}

export type PlacementEntry = (c: PlacementContext) => Promise<RunSummary>;

/**
 * What `runStages` records of a run runJob opened: its ids, folder, metrics, resume state, clock, stop
 * signal, the report file and the eval set (`more` sets the report's title and extra lines).
 */
export function runContext(
  c: PlacementContext,
  pools: Pick<TaskPools, 'evalSet' | 'eval'>,
  state: RunState,
  more: Pick<RunContext, 'reportExtra'> & { reportTitle?: string } = {},
): RunContext {
  return {
    runId: c.runId,
    runDir: c.runDir,
    metrics: c.metrics,
    state,
    t0: c.t0,
    signal: c.opts.signal,
    // monitor.report: false writes no HTML report (the summary's report is then '').
    reportFile: c.cfg.monitor.report ? join(c.runDir, 'report.html') : '',
    reportTitle: more.reportTitle ?? `RFT Studio run ${c.runId}`,
    ...(more.reportExtra ? { reportExtra: more.reportExtra } : {}),
    evalSet: { note: pools.evalSet, tasks: pools.eval.length },
  };
}
