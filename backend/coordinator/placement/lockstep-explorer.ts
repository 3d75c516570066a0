// The explorer of placement `memory` in lockstep (sync_offset 0): each trainer step first explores with
// the trainer's own weights until the buffer holds the stage's batch for this step's read (the
// overlapped explorer is memory-explorer.ts). After a kill -9 a step whose batch the buffer recorded is
// replayed, not explored anew, and the rollouts one step stored but never sampled are trained on.
import { logger } from '../../core/log.js';
import type { ExperienceStore } from '../../buffer/storage/index.js';
import type { Sampler } from '../../buffer/sampler/index.js';
import type { FillingExplorer } from '../../explorer/filling-explorer.js';
import type { RolloutModel } from '../../explorer/workflow.js';
import { runExplorerLoop, sharedWeights } from '../../explorer/explorer-loop.js';
import type { StageParts } from '../run-loop.js';

const log = logger('coordinator');

export interface LockstepRun {
  store: ExperienceStore;
  runId: string;
  explorer: FillingExplorer;
  /** The run was resumed: its first explore step looks for rollouts stored before the stop. */
  resumed: boolean;
  /** The trainer's version, which is its steps trained (the step the next batch trains). */
  version(): number;
  /** The rollout model, holding the trainer's current weights. */
  model(): Promise<RolloutModel>;
}

/**
 * The lockstep explore of a run: `explore(parts, sampler, onStep)` gives a stage's `StageTransport.explore`.
 * Each call runs one step of the explorer driver (explorer/explorer-loop.ts) with the trainer's own
 * weights; `onStep` gets the driver's `explore` record.
 */
export class LockstepExplorer {
  private orphanCheckDone = false;
  constructor(private readonly r: LockstepRun) {}

  explore(
    parts: Pick<StageParts, 'explores' | 'batchSize' | 'samplerConfig'>,
    sampler: Sampler,
    onStep: (rec: Record<string, unknown>) => void,
  ): () => Promise<number | null> {
    const { store, runId, explorer } = this.r;
    return async () => {
      if (!parts.explores) return parts.batchSize;
      const version = this.r.version();
      const step = version;
      // After a kill -9 the steps trained since the last checkpoint have their batches recorded in the
      // buffer: the sampler hands the same batch again, so such a step is replayed, not explored anew
      // (exploring would leave that step's rollouts in the buffer, never trained on).
      if ((await store.consumed(parts.samplerConfig.consumer, step, runId)).length > 0) return parts.batchSize;
      // A kill -9 after a step's rollouts were stored but before its batch was sampled leaves them
      // unused at the current version (in a live loop every such row is trained before the version
      // moves on): the first step after a resume trains on them instead of exploring again.
      const checkOrphans = this.r.resumed && !this.orphanCheckDone;
      const orphans = checkOrphans
        ? (await store.availability('fifo', { source: 'usual', minVersion: version, runId })).ready
        : 0;
      if (checkOrphans) this.orphanCheckDone = true;
      // The stage's batch (openStage's, the one the explorer process fills and the distributed trainer
      // tops up to), never just what one explore step made trainable: a step the experience pipeline
      // thinned out, or whose partial rollouts released few groups, is explored again with the same
      // weights until the buffer holds a whole batch for this step's read (FillingExplorer).
      const missing = async () => {
        const st = await sampler.waitStatus(parts.batchSize, version);
        return st ? Math.max(1, st.needed - st.ready) : 0;
      };
      if (orphans > 0) {
        log.info(
          `resume: step ${step} trains on ${orphans} rollouts stored before the stop (not explored again unless short of the batch)`,
        );
        if ((await missing()) === 0) return parts.batchSize;
      }
      explorer.need = await missing();
      await runExplorerLoop({
        explorer,
        target: explorer.step,
        requiredVersion: () => version,
        ...sharedWeights(
          () => version,
          () => this.r.model(),
        ),
        maxSteps: 1,
        onMetrics: (rec) => {
          if (rec.kind === 'explore') onStep(rec);
        },
      });
      // Stopped while refilling (or the rows are not ones the sampler takes): no step; the loop
      // checks its bounds and the stop, then explores again.
      if ((await missing()) > 0) return null;
      return parts.batchSize;
    };
  }
}
