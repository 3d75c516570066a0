// The one entry signature of the placements runJob (run.ts) hands a run to: in-process.ts
// (placement memory), child-processes.ts (placement checkpoint) and explore-bench.ts (modes
// explore and bench, no trainer). Each takes the run as runJob opened it. The distributed
// placement (distributed.ts) is not started by runJob: `rft trainer` (cli/commands/trainer.ts)
// starts its trainer on a run that `rft coordinator` created in the database, with its own options.
import type { RunConfig } from '../../core/config.js';
import type { CheckpointMeta } from '../../model/checkpoint.js';
import type { RunRegistry } from '../../buffer/runs.js';
import type { MetricsLog } from '../monitor.js';
import type { RunOptions, RunSummary } from '../run-types.js';

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
