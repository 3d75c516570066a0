// The trainer: takes a batch of experiences, computes the algorithm's loss over micro-batches with
// gradient accumulation, clips by global norm, and updates the actor with AdamW; the reference
// model stays frozen; a critic (value head model) has its own optimiser.
import { InputError } from '../core/errors.js';
import { tf, tidy } from '../model/engine.js';
import type { Transformer } from '../model/transformer.js';
import { tokenLogprobs } from '../model/logprobs.js';
import { AdamW, clipByGlobalNorm, lrSchedule } from '../model/optim.js';
import type { Experience } from '../core/types.js';
import { buildBatch, disposeBatch, responseValues, type TrainBatch } from './batch.js';
import type { Objective } from './objective.js';
import { batchPatches } from './images.js';
import { screenBatch } from '../core/sequence-check.js';
import { logger } from '../core/log.js';
import { describePlan, planMicroBatch, type MicroBatchPlan } from './memory-plan.js';
import { AdaptiveLr, updateKl, type AdaptiveLrOptions } from './adaptive-lr.js';
import { groupSpread } from './group-spread.js';
import { accumulate, rolloutStats, usualLogRatio, wholePairs } from './step-parts.js';
import { criticStep } from './critic-step.js';

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
    // One bad experience (too long for the model, rejected after it was sampled, malformed) is
    // skipped and counted, never allowed to kill the run.
    const screened = screenBatch(all, {
      maxSeqLen: this.actor.config.maxSeqLen,
      vocabSize: this.actor.config.vocabSize,
    });
    const { keep: exps, skipped } = this.objective.pairedRows ? wholePairs(all, screened.skipped) : screened;
    for (const x of skipped) log.warn(`skipped experience ${x.id}: ${x.reason}`);
    if (exps.length === 0) {
      this.step++;
      const total = (performance.now() - t0) / 1000;
      return {
        step: this.step,
        loss: 0,
        grad_norm: 0,
        lr: 0,
        tokens: 0,
        tokens_per_s: 0,
        staleness: 0,
        time_grad_s: 0,
        time_optim_s: 0,
        time_total_s: total,
        expert_rows: 0,
        skipped_experiences: skipped.length,
      };
    }
    const B = exps.length;
    const mb0 = this.microBatch(exps);
    // A (chosen, rejected) pair never straddles two micro-batches.
    const mb = this.objective.pairedRows && mb0 % 2 === 1 ? mb0 + 1 : mb0;
    const schedule = (base: number) =>
      lrSchedule(this.step, {
        lr: base,
        warmupSteps: this.opts.warmupSteps,
        totalSteps: this.opts.totalSteps,
        decay: this.opts.decay,
        minRatio: this.opts.minLrRatio,
        progress,
      });
    // Fixed: the schedule scales the lr. Auto: the controller's lr; the schedule scales the target KL
    // (by its square: the KL grows as the lr squared).
    const lr = this.autoLr ? this.autoLr.lr : schedule(this.opts.lr);
    const klTarget = this.autoLr ? this.autoLr.o.targetKl * schedule(1) ** 2 : undefined;
    // The update KL's probe: the batch's first rows, their log-probs before the step (from the
    // gradient pass, or a pass of their own where LoRA dropout makes the training pass noisy).
    const probe = exps.slice(0, PROBE_ROWS);
    const before: number[][] = this.actor.lora?.dropout ? await this.responseLogprobs(probe) : [];
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
    const sums: Record<string, number> = {};
    // KL to the reference of the policy that sampled (k1 over the usual rows' trained tokens): the collapse guard's signal.
    const refKl = { sum: 0, tokens: 0 };
    let grads: Record<string, tf.Tensor> = {};
    let tokens = 0;
    let tGrad = 0;
    for (let s = 0; s < B; s += mb) {
      const micro = exps.slice(s, s + mb);
      const weight = micro.length / B;
      const batch = buildBatch(micro, this.opts.padId);
      tokens += batch.tokens;
      // Vision rows: the patch rows are made here, outside the tape (the gradient reads them later).
      let patches: tf.Tensor3D | undefined;
      try {
        patches = batchPatches(this.actor, micro);
        if (this.critic)
          sums.critic_loss =
            (sums.critic_loss ?? 0) +
            (await criticStep(this.critic, this.criticOpt!, this.opts.gradClip, micro, batch, weight, patches));
        const refLogprob = this.reference ? this.logprobsNoGrad(this.reference, batch, patches) : undefined;
        if (refLogprob) {
          const [sum, n] = await usualLogRatio(micro, batch, refLogprob);
          refKl.sum += sum;
          refKl.tokens += n;
        }
        if (this.objective.recomputeOldLogprobs) {
          const old = this.logprobsNoGrad(this.actor, batch, patches);
          batch.oldLogprob.dispose();
          batch.oldLogprob = old;
        }
        const kept: Record<string, tf.Scalar | number> = {};
        const inProbe = Math.max(0, Math.min(micro.length, probe.length - s));
        let probeLp: tf.Tensor | undefined;
        const g0 = performance.now();
        const { value, grads: g } = tf.variableGrads(() => {
          const lp = tokenLogprobs(this.actor, batch.ids, {
            attentionMask: batch.attentionMask,
            temperature: this.opts.temperature,
            withEntropy: this.objective.needsEntropy,
            prefix: patches && this.actor.embedPatches(patches),
            train: true,
          });
          const out = this.objective.loss({
            logprob: lp.logprobs,
            oldLogprob: batch.oldLogprob,
            refLogprob,
            advantages: batch.advantages,
            actionMask: batch.actionMask,
            expertMask: batch.expertMask,
            entropy: lp.entropy,
            step: this.step,
          });
          for (const [k, v] of Object.entries(out.metrics)) kept[k] = typeof v === 'number' ? v : tf.keep(v);
          if (inProbe > 0 && !this.actor.lora?.dropout) probeLp = tf.keep(tf.slice(lp.logprobs, 0, inProbe));
          return tf.mul(out.loss, weight) as tf.Scalar;
        }, this.actor.variables());
        if (probeLp) {
          const data = (await probeLp.data()) as Float32Array;
          probeLp.dispose();
          before.push(...responseValues(micro.slice(0, inProbe), data, batch.length - 1));
        }
        tGrad += (performance.now() - g0) / 1000;
        sums.loss = (sums.loss ?? 0) + (await value.data())[0]!;
        value.dispose();
        for (const [k, v] of Object.entries(kept)) {
          const x = typeof v === 'number' ? v : (await v.data())[0]!;
          if (typeof v !== 'number') v.dispose();
          sums[k] = (sums[k] ?? 0) + x * weight;
        }
        grads = accumulate(grads, g);
        refLogprob?.dispose();
      } finally {
        disposeBatch(batch);
        patches?.dispose();
      }
    }
    const o0 = performance.now();
    const clipped = await clipByGlobalNorm(grads, this.opts.gradClip ?? 1.0);
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
    if (this.autoLr) this.autoLr.observe(uk.kl, klTarget);
    this.step++;
    const usual = exps.filter((e) => e.source === 'usual' && e.modelVersion >= 0);
    const total = (performance.now() - t0) / 1000;
    return {
      ...sums,
      step: this.step,
      loss: sums.loss ?? 0,
      grad_norm: clipped.norm,
      lr,
      tokens,
      tokens_per_s: tokens / total,
      micro_batch: mb,
      staleness: usual.length ? usual.reduce((a, e) => a + (modelVersion - e.modelVersion), 0) / usual.length : 0,
      time_grad_s: tGrad,
      time_optim_s: tOpt,
      time_total_s: total,
      expert_rows: exps.length - exps.filter((e) => e.source !== 'expert').length,
      skipped_experiences: skipped.length,
      ...(rewardKl !== undefined ? { reward_kl: rewardKl } : {}),
      ...(refKl.tokens > 0 ? { ref_kl: refKl.sum / refKl.tokens } : {}),
      ...(uk.tokens > 0 ? { update_kl: uk.kl } : {}),
      ...(klTarget !== undefined ? { update_kl_target: klTarget, lr_next: this.autoLr!.lr } : {}),
      ...rolloutStats(usual),
      ...groupSpread(usual),
    };
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

  /** Log-probs of the batch's tokens under `model`, outside any gradient tape: [B, L-1]. */
  private logprobsNoGrad(model: Transformer, batch: TrainBatch, patches?: tf.Tensor3D): tf.Tensor2D {
    return tidy(
      () =>
        tokenLogprobs(model, batch.ids, {
          attentionMask: batch.attentionMask,
          temperature: this.opts.temperature,
          prefix: patches && model.embedPatches(patches),
        }).logprobs,
    );
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
      const lp = this.logprobsNoGrad(model, batch, patches);
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
