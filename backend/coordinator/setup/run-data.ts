// Run setup, what every placement does the same way to a run's records: seed a new run (its tasks,
// once its demonstrations) and publish a version of its weights (a checkpoint folder, then its record
// in the buffer, which is what explorers, evaluations and resumes look up). Nothing in setup/ imports
// run.ts or a placement.
import type { ExperienceStore } from '../../buffer/storage/index.js';
import { saveCheckpoint, type CheckpointMeta, type TrainerState } from '../../model/checkpoint.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import type { Transformer } from '../../model/transformer.js';
import { expertExperience, type TaskPools } from './tasks.js';

/** A new run's rows: its training tasks (upserted) and, once, the expert experiences of its demonstrations. */
export async function seedRun(store: ExperienceStore, runId: string, pools: TaskPools, tok: Tokenizer): Promise<void> {
  // A run killed before its first checkpoint starts over here: tasks upsert, experts are added once.
  await store.putTasks(runId, pools.train);
  if (pools.experts.length && (await store.count({ runId, source: 'expert' })) === 0)
    await store.appendExperiences(pools.experts.map((t) => expertExperience(tok, runId, t, pools.solve(t))));
}

/**
 * The meta of version `version` published at step `stageStep` of stage `stageIndex`; `stageDone`: the
 * stage ended with it, so a resume starts at the next stage's first step.
 */
export function stageCheckpointMeta(
  version: number,
  stage: string,
  stageIndex: number,
  stageStep: number,
  stageDone: boolean,
): CheckpointMeta {
  return {
    version,
    step: version,
    stage,
    stage_index: stageDone ? stageIndex + 1 : stageIndex,
    stage_step: stageDone ? 0 : stageStep,
  };
}

/** Writes a checkpoint of the run (with the PPO critic when the stage has one) and records it in the buffer. */
export async function publishCheckpoint(o: {
  store: ExperienceStore;
  runId: string;
  model: Transformer;
  tok: Tokenizer;
  dir: string;
  meta: CheckpointMeta;
  /** The stage's trainer state: its critic and optimiser, `lr: auto`'s lr. */
  critic?: TrainerState;
}): Promise<void> {
  await saveCheckpoint(o.model, o.dir, o.meta, o.tok, {
    critic: o.critic?.critic,
    criticOptimizer: o.critic?.criticOptimizer,
    lrState: o.critic?.lrState ? () => o.critic!.lrState!() : undefined,
  });
  await o.store.addCheckpoint({
    runId: o.runId,
    version: o.meta.version,
    path: o.dir,
    checksum: '',
    createdAt: Date.now(),
  });
}
