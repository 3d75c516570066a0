// The trainer: takes a batch of experiences, computes the algorithm's loss over micro-batches with
// gradient accumulation, clips by global norm, and updates the actor with AdamW; the reference
// model stays frozen; a critic (value head model) has its own optimiser.
import { InputError } from '../core/errors.js';
import { tf, tidy } from '../model/engine.js';
import type { Transformer } from '../model/transformer.js';
import { AdamW, clipByGlobalNorm, lrSchedule } from '../model/optim.js';
import type { Experience } from '../core/types.js';
import { buildBatch, disposeBatch, responseValues } from './batch.js';
import type { Objective } from './objective.js';
import { batchPatches } from './images.js';
import { screenBatch } from '../core/sequence-check.js';
import { logger } from '../core/log.js';
import { describePlan, planMicroBatch, type MicroBatchPlan } from './memory-plan.js';
import { AdaptiveLr, batchTeaches, updateKl, type AdaptiveLrOptions } from './adaptive-lr.js';
import { wholePairs } from './step-parts.js';
import { emptySums, logprobsNoGrad, microStep } from './micro-step.js';
import { emptyStepMetrics, stepMetrics } from './step-metrics.js';

const log = logger('trainer');
/** Rows of each step's batch the update KL is measured on (one extra forward pass of these after the step). */
export const PROBE_ROWS = 64;
/** The critic's lr when the actor's is auto (a fresh value model, trained from scratch). */
export const AUTO_CRITIC_LR = 1e-4;

export interface TrainerOptions {
  /** The fixed lr; with `lrAuto`, unused (the controller's start is the first lr). */
  lr: number;
  /**
   * `trainer.lr: auto`: the lr is moved after every step to keep the update KL near this target
   * (adaptive-lr.ts); warm-up and decay then shape the target (KL grows as lr squared).
   */
  lrAuto?: AdaptiveLrOptions;
  warmupSteps?: number;
  totalSteps?: number;
  decay?: 'cosine' | 'linear' | 'constant';
  minLrRatio?: number;
  weightDecay?: number;
  gradClip?: number;
  /**
   * Rows per micro-batch; gradients are accumulated over the batch. 0 = whole batch. Unset: sized
   * each step from the model, the batch's sequence length and the wasm heap left (memory-plan.ts).
   */
  microBatchSize?: number;
  /** Sampling temperature the explorer used: log-probs are recomputed at the same temperature. */
  temperature?: number;
  criticLr?: number;
  padId: number;
}

export interface StepMetrics {
  step: number;
  loss: number;
  grad_norm: number;
  lr: number;
  tokens: number;
  tokens_per_s: number;
  /** Mean of (current version - experience version) over usual rows. */
  staleness: number;
  time_grad_s: number;
  time_optim_s: number;
  time_total_s: number;
  [metric: string]: number;
}

export class Trainer {
  private readonly opt: AdamW;
  private readonly criticOpt?: AdamW;
  step = 0;
  /** The last logged automatic choice (logged again when it changes). */
  private lastPlan?: string;
  /** `lr: auto`'s controller (its lr is trainer state: checkpointed and resumed). */
  private readonly autoLr?: AdaptiveLr;

  constructor(
    readonly actor: Transformer,
    readonly objective: Objective,
    readonly opts: TrainerOptions,
    readonly reference?: Transformer,
    readonly critic?: Transformer,
  ) {
    if (objective.needsReference && !reference)
      throw new Error(`algorithm '${objective.name}' needs a reference model`);
    if (objective.needsCritic && !critic) throw new Error(`algorithm '${objective.name}' needs a critic`);
    if (opts.lrAuto) this.autoLr = new AdaptiveLr(opts.lrAuto);
    this.opt = new AdamW(actor.variables(), { lr: opts.lr, weightDecay: opts.weightDecay ?? 0 });
    // A critic is a fresh value model (trained from scratch): a fixed lr, never the actor's auto start.
    const criticLr = opts.criticLr ?? (opts.lrAuto ? AUTO_CRITIC_LR : opts.lr);
    if (critic) this.criticOpt = new AdamW(critic.variables(), { lr: criticLr });
  }

  /** `lr: auto`'s state (its current lr), saved in checkpoints; undefined for a fixed lr. */
  lrState(): { lr: number; ramping: boolean } | undefined {
    return this.autoLr?.state();
  }

  /** A resumed stage continues `lr: auto` at the lr it had reached. */
  restoreLrState(s: { lr: number; ramping?: boolean }): void {
    this.autoLr?.restore(s);
  }

  get optimizer(): AdamW {
    return this.opt;
  }

  /** The critic's AdamW (PPO): saved with the critic in checkpoints and loaded back on resume. */
  get criticOptimizer(): AdamW | undefined {
    return this.criticOpt;
  }

  /**
   * One optimiser step on `exps`. `modelVersion` is the actor's version before the update;
   * `progress` (0..1, how far the stage is) drives the learning-rate decay.
   */
  async trainStep(all: Experience[], modelVersion = this.step, progress?: number): Promise<StepMetrics> {
    const t0 = performance.now();
    const { keep: exps, skipped } = this.screen(all);
    if (exps.length === 0) {
      this.step++;
      return emptyStepMetrics(this.step, (performance.now() - t0) / 1000, skipped.length);
    }
    const B = exps.length;
    const mb0 = this.microBatch(exps);
    // A (chosen, rejected) pair never straddles two micro-batches.
    const mb = this.objective.pairedRows && mb0 % 2 === 1 ? mb0 + 1 : mb0;
    const { lr, klTarget } = this.stepLr(progress);
    // The update KL's probe: the batch's first rows, their log-probs before the step (from the
    // gradient pass, or a pass of their own where LoRA dropout makes the training pass noisy).
    const probe = exps.slice(0, PROBE_ROWS);
    const before: number[][] = this.actor.lora?.dropout ? await this.responseLogprobs(probe) : [];
    const rewardKl = await this.prepareRows(exps);
    const acc = emptySums();
    for (let s = 0; s < B; s += mb) {
      const micro = exps.slice(s, s + mb);
      const inProbe = Math.max(0, Math.min(micro.length, probe.length - s));
      await microStep(this, micro, micro.length / B, inProbe, before, acc);
    }
    const o0 = performance.now();
    const clipped = await clipByGlobalNorm(acc.grads, this.opts.gradClip ?? 1.0);
    this.opt.step(clipped.grads, lr);
    tf.dispose(Object.values(clipped.grads));
    const tOpt = (performance.now() - o0) / 1000;
    // The change this update made to the policy (one no-grad pass over the probe); auto moves its lr by it.
    const after = await this.responseLogprobs(probe);
    const uk = updateKl(
      before,
      after,
      probe.map((e) => e.actionMask),
    );
    // A batch that teaches nothing (all its groups' rewards equal) says nothing about the lr.
    if (this.autoLr) this.autoLr.observe(batchTeaches(exps) ? uk.kl : Number.NaN, klTarget);
    this.step++;
    const totalS = (performance.now() - t0) / 1000;
    return stepMetrics({
      step: this.step,
      modelVersion,
      exps,
      skipped: skipped.length,
      acc,
      gradNorm: clipped.norm,
      lr,
      microBatch: mb,
      tOpt,
      totalS,
      rewardKl,
      updateKl: uk,
      klTarget,
      lrNext: this.autoLr?.lr,
    });
  }

  /** One bad experience (too long for the model, rejected after it was sampled, malformed) is skipped and counted, never allowed to kill the run. */
  private screen(all: Experience[]) {
    const screened = screenBatch(all, {
      maxSeqLen: this.actor.config.maxSeqLen,
      vocabSize: this.actor.config.vocabSize,
    });
    const kept = this.objective.pairedRows ? wholePairs(all, screened.skipped) : screened;
    for (const x of kept.skipped) log.warn(`skipped experience ${x.id}: ${x.reason}`);
    return kept;
  }

  /**
   * This step's lr. Fixed: the schedule scales the lr. Auto: the controller's lr; the schedule scales
   * the target KL (by its square: the KL grows as the lr squared).
   */
  private stepLr(progress?: number): { lr: number; klTarget?: number } {
    const schedule = (base: number) =>
      lrSchedule(this.step, {
        lr: base,
        warmupSteps: this.opts.warmupSteps,
        totalSteps: this.opts.totalSteps,
        decay: this.opts.decay,
        minRatio: this.opts.minLrRatio,
        progress,
      });
    const lr = this.autoLr ? this.autoLr.lr : schedule(this.opts.lr);
    const klTarget = this.autoLr ? this.autoLr.o.targetKl * schedule(1) ** 2 : undefined;
    return { lr, klTarget };
  }

  /** The usual rows' KL penalty on their rewards (its mean KL, reported) and their advantages from the critic. */
  private async prepareRows(exps: Experience[]): Promise<number | undefined> {
    let rewardKl: number | undefined;
    if (this.reference && this.objective.applyRewardPenalty) {
      const usual = exps.filter((e) => e.source === 'usual');
      if (usual.length)
        rewardKl = this.objective.applyRewardPenalty(usual, await this.responseLogprobs(usual, this.reference)).meanKl;
    }
    if (this.critic && this.objective.computeAdvantages) {
      const usual = exps.filter((e) => e.source === 'usual');
      if (usual.length) this.objective.computeAdvantages(usual, await this.values(usual));
    }
    return rewardKl;
  }

  /**
   * Rows per micro-batch for these experiences: the config's micro_batch_size when it is set (0 =
   * the whole batch), else the largest that fits the heap at this batch's sequence length.
   */
  microBatch(exps: Experience[]): number {
    const B = exps.length;
    const explicit = this.opts.microBatchSize;
    if (explicit !== undefined) return explicit > 0 ? explicit : B;
    const plan = this.plan(B, Math.max(...exps.map((e) => e.promptTokens.length + e.responseTokens.length)));
    if (plan.refusal) throw new InputError(`trainer: ${plan.refusal}`);
    const line = describePlan(this.actor.config, plan);
    if (plan.micro < B && line !== this.lastPlan) log.info(line);
    this.lastPlan = line;
    return plan.micro;
  }

  /** The heap plan for `batch` rows of `seqLen` tokens (trainable parameters: their gradients are held across micro-batches). */
  plan(batch: number, seqLen: number): MicroBatchPlan {
    const trainable =
      this.actor.variables().reduce((a, v) => a + v.size * 4, 0) +
      (this.critic?.variables().reduce((a, v) => a + v.size * 4, 0) ?? 0);
    return planMicroBatch(this.actor.config, { batch, seqLen, trainableBytes: trainable });
  }

  /** Per-response-token log-probs under the current actor (e.g. to fill expert rows' behaviour log-probs). */
  async responseLogprobs(exps: Experience[], model: Transformer = this.actor): Promise<number[][]> {
    // In micro-batches as training runs them: a whole batch's activations need not fit the heap.
    const mb = exps.length > 1 ? this.microBatch(exps) : 1;
    if (mb < exps.length) {
      const out: number[][] = [];
      for (let s = 0; s < exps.length; s += mb)
        out.push(...(await this.responseLogprobs(exps.slice(s, s + mb), model)));
      return out;
    }
    const batch = buildBatch(exps, this.opts.padId);
    let patches: tf.Tensor3D | undefined;
    try {
      patches = batchPatches(model, exps);
      const lp = logprobsNoGrad(model, batch, this.opts.temperature, patches);
      const data = (await lp.data()) as Float32Array;
      lp.dispose();
      return responseValues(exps, data, batch.length - 1);
    } finally {
      disposeBatch(batch);
      patches?.dispose();
    }
  }

  /** Values of every response position under the critic, per experience (for GAE). */
  async values(exps: Experience[]): Promise<number[][]> {
    if (!this.critic) throw new Error('no critic');
    const mb = exps.length > 1 ? this.microBatch(exps) : 1;
    if (mb < exps.length) {
      const out: number[][] = [];
      for (let s = 0; s < exps.length; s += mb) out.push(...(await this.values(exps.slice(s, s + mb))));
      return out;
    }
    const batch = buildBatch(exps, this.opts.padId);
    let patches: tf.Tensor3D | undefined;
    try {
      patches = batchPatches(this.critic, exps);
      const v = tidy(() => {
        const out = this.critic!.hiddenStates(batch.ids, {
          attentionMask: batch.attentionMask,
          prefix: patches && this.critic!.embedPatches(patches),
        });
        const P = out.hidden.shape[1] - batch.length;
        return tf.slice(this.critic!.values(out.hidden), [0, P], [exps.length, batch.length - 1]);
      });
      const data = (await v.data()) as Float32Array;
      v.dispose();
      return responseValues(exps, data, batch.length - 1);
    } finally {
      disposeBatch(batch);
      patches?.dispose();
    }
  }

  dispose(): void {
    this.opt.dispose();
    this.criticOpt?.dispose();
  }
}
