// Opening a stage, the same for every placement (run-loop.ts runs it): the stage's objective, its
// reference and critic (continued from the checkpoint it starts from), the trainer and its lr, the
// sampler's settings and the batch size, refused at the start when a row cannot fit the wasm heap.
import { InputError } from '../core/errors.js';
import type { RunConfig } from '../core/config.js';
import { logger } from '../core/log.js';
import { resolveTrainerSettings } from '../core/trainer-defaults.js';
import { readCheckpointMeta } from '../model/checkpoint-meta.js';
import { Transformer } from '../model/transformer.js';
import { join } from 'node:path';
import { CRITIC_DIR, loadCritic } from '../model/checkpoint.js';
import { loadOptimizerState, OPTIMIZER_FILE } from '../model/optimizer-state.js';
import type { Tokenizer } from '../model/tokenizer/index.js';
import { Trainer } from '../trainer/trainer.js';
import { makeObjective } from '../trainer/resolve-algorithm.js';
import { describePlan } from '../trainer/memory-plan.js';
import type { Objective } from '../trainer/objective.js';
import { configuredBatch, exploreRows } from './stage-batch.js';
import { samplerConfig, stageBatchSize, trainerOptions, type Stage } from './setup/trainer.js';
import { stageExplores } from './setup/stage-data.js';

const log = logger('coordinator');

type SamplerConfig = ReturnType<typeof samplerConfig>;

/** The trainer side of one stage, built the same way by every placement. */
export interface StageParts {
  objective: Objective;
  trainer: Trainer;
  explores: boolean;
  samplerConfig: SamplerConfig;
  batchSize: number;
  dispose(): void;
}

/**
 * `reference()` gives the policy as it entered the stage (a clone in one process, the stage-start
 * checkpoint elsewhere); under LoRA the reference is the frozen base without adapters (a view).
 * `criticFrom`: the checkpoint folder the stage starts from (every placement passes its newest): a
 * stage that needs a critic continues the one saved there (`critic/`, the previous PPO stage's or the
 * run's before a resume) and starts a fresh one only when the run has none yet.
 */
export async function openStage(
  cfg: RunConfig,
  stage: Stage,
  model: Transformer,
  tok: Tokenizer,
  store: { count(f: { source: 'expert'; status: 'ok'; runId?: string }): Promise<number> },
  runId: string,
  reference: () => Transformer,
  criticFrom?: string,
): Promise<StageParts> {
  const objective = makeObjective(stage.algorithm.name, stage.algorithm.params);
  const ref = objective.needsReference ? (model.lora ? model.base() : reference()) : undefined;
  const critic = objective.needsCritic ? stageCritic(cfg, model, criticFrom) : undefined;
  const trainer = new Trainer(model, objective, trainerOptions(cfg, stage, tok.padId), ref, critic);
  // Which lr the stage trains with and why (a pretrained checkpoint's defaults are not a preset's).
  log.info(`trainer, stage ${stage.name}: ${resolveTrainerSettings(cfg, stage.lr).line}`);
  if (criticFrom) continueLrAuto(trainer, criticFrom, stage.name);
  const explores = stageExplores(stage);
  const sCfg0 = samplerConfig(stage.algorithm.name, stage.algorithm.params, cfg, runId);
  // buffer.train_from: the rows come from another run's weights; its min_version (applied when they
  // were copied in) is their bound, not this trainer's version minus max_staleness.
  // (An infinite staleness is no bound: sampler/wait.ts minVersionFor.)
  const sCfg = !explores && cfg.buffer.train_from ? { ...sCfg0, maxStaleness: Infinity } : sCfg0;
  let batchSize: number;
  try {
    // A continued critic continues its optimiser too (moments and step count), when they were saved.
    if (
      critic &&
      criticFrom &&
      loadOptimizerState(join(criticFrom, CRITIC_DIR, OPTIMIZER_FILE), critic, trainer.criticOptimizer!)
    )
      log.info(`critic: optimiser state continued from ${criticFrom} (step ${trainer.criticOptimizer!.stepCount})`);
    const at = cfg.stages?.indexOf(stage) ?? -1;
    const given = configuredBatch(cfg, stage, at >= 0 ? at : undefined);
    batchSize = await stageBatchSize(store, sCfg, explores, given?.value, exploreRows(cfg), given?.field);
    checkStageFits(cfg, model, trainer, batchSize, explores);
  } catch (e) {
    trainer.dispose();
    ref?.dispose();
    critic?.dispose();
    throw e;
  }
  return {
    objective,
    trainer,
    explores,
    samplerConfig: sCfg,
    batchSize,
    dispose() {
      trainer.dispose();
      ref?.dispose();
      critic?.dispose();
    },
  };
}

/**
 * A stage resumed in the middle (its checkpoint's stage, not yet done) continues `lr: auto` at the lr
 * it had reached (rft.json `lr_auto`); a new stage starts the controller afresh.
 */
function continueLrAuto(trainer: Trainer, from: string, stage: string): void {
  const meta = readCheckpointMeta(from);
  const saved = meta.lr_auto as { lr: number; ramping?: boolean } | undefined;
  if (!saved || !trainer.lrState() || meta.stage !== stage || !(Number(meta.stage_step) > 0)) return;
  trainer.restoreLrState(saved);
  log.info(`lr auto: continued at ${saved.lr.toExponential(2)} from ${from}`);
}

/** The stage's critic: the one saved in `from` (a checkpoint folder), else a fresh value head model. */
function stageCritic(cfg: RunConfig, model: Transformer, from: string | undefined): Transformer {
  const saved = from ? loadCritic(from, model.config) : undefined;
  if (saved) {
    log.info(`critic: continued from ${from}`);
    return saved;
  }
  return new Transformer({ ...model.config, valueHead: true }, cfg.seed + 17);
}

/**
 * Refuses at the start a stage whose rows cannot fit the wasm heap even one at a time (instead of a
 * heap abort at its first step), and logs the micro-batch the trainer will start with. The length
 * checked is the shortest the stage asks for: one prompt token plus explorer.sampling.max_new_tokens
 * where it explores; each step checks its own batch again (Trainer.microBatch).
 */
export function checkStageFits(
  cfg: RunConfig,
  model: Transformer,
  trainer: Trainer,
  batch: number,
  explores: boolean,
): void {
  const seqLen = Math.min(model.config.maxSeqLen, explores ? cfg.explorer.sampling.max_new_tokens + 1 : 2);
  const plan = trainer.plan(batch, seqLen);
  if (plan.refusal) throw new InputError(`trainer.batch_size ${batch}: ${plan.refusal}`);
  const explicit = cfg.trainer.micro_batch_size;
  if (explicit === undefined) log.info(`trainer: at ${seqLen} tokens a row, ${describePlan(model.config, plan)}`);
  else if ((explicit || batch) > plan.micro)
    log.warn(
      `trainer.micro_batch_size ${explicit} (${explicit ? explicit : 'the whole batch of ' + batch} rows): at ${seqLen} tokens a row the estimate fits ${plan.micro} in the wasm heap; unset micro_batch_size to let the trainer size it (${describePlan(model.config, plan)})`,
    );
}
