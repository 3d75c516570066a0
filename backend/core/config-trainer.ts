// The run config's trainer side (core/config.ts puts the sections together): the algorithm, the
// learning rate (a number or auto), a stage of a multi-stage config, and the trainer section's batch,
// lr schedule, clipping and steps.
import { z } from 'zod';

export const algorithmSection = z
  .object({
    name: z.string().default('mix'),
    /** Parameters of the algorithm bundle (clip_range, mu, expert_ratio, kl_coef, ...). */
    params: z.record(z.unknown()).default({}),
  })
  .strict()
  .default({});

/** A learning rate: a positive number, or `auto` (set from each update's KL, trainer/adaptive-lr.ts). */
const LR_EXPECTED = "expected a positive number or 'auto'";
const lrField = z.union([z.number().positive({ message: LR_EXPECTED }), z.literal('auto')], {
  errorMap: () => ({ message: LR_EXPECTED }),
});

export const stageSchema = z
  .object({
    name: z.string(),
    algorithm: algorithmSection,
    /** Trainer steps in this stage. */
    steps: z.number().int().positive().optional(),
    /** Or a wall-clock budget for the stage. */
    wall_seconds: z.number().positive().optional(),
    mode: z.enum(['both', 'explore', 'train']).default('both'),
    /** The stage's own lr: a positive number, or `auto` (see trainer.lr). */
    lr: lrField.optional(),
    /** Learning-rate decay over the stage (default trainer.lr_decay); see trainer.lr_decay. */
    lr_decay: z.enum(['constant', 'cosine', 'linear']).optional(),
    min_lr_ratio: z.number().min(0).max(1).optional(),
    /** Trainer batch of this stage, expert rows included (default trainer.batch_size, which says what unset means). */
    batch_size: z.number().int().positive().optional(),
  })
  .strict()
  .refine((s) => s.steps !== undefined || s.wall_seconds !== undefined, {
    message: 'a stage needs steps or wall_seconds',
  });

export const trainerSection = z
  .object({
    /**
     * Rows of each trainer step, expert rows included (a stage's batch_size overrides it). Unset: a
     * stage that explores trains one explore step's rollouts (tasks_per_step x repeat_times, plus
     * MIX's expert share); a stage that trains on the buffer alone takes 64. Given for an exploring
     * stage, it is honoured: short steps are explored again until the batch is full; a batch whose
     * rollout share is less than one explore step is refused.
     */
    batch_size: z.number().int().positive().optional(),
    /** Rows per micro-batch (gradients accumulate over the batch); 0 = the whole batch at once. Unset: the trainer sizes it from the model and the wasm heap, and logs its choice. */
    micro_batch_size: z.number().int().min(0).optional(),
    /**
     * A positive number, or `auto`: the lr is moved every step to keep the policy change of each
     * update (its KL per token) in a band (trainer/adaptive-lr.ts). Unset: 1e-3 for a built-in size
     * trained from scratch; `auto` from model.checkpoint, full or LoRA (core/trainer-defaults.ts; the
     * run's log says which).
     */
    lr: lrField.optional(),
    /**
     * `lr: auto`'s controller (unset fields: core/trainer-defaults.ts): the update KL per token it
     * keeps each step near (band [target_kl/2, 2 target_kl]), its first lr and its bounds.
     */
    lr_auto: z
      .object({
        target_kl: z.number().positive().optional(),
        start: z.number().positive().optional(),
        min: z.number().positive().optional(),
        max: z.number().positive().optional(),
      })
      .strict()
      .refine((a) => a.min === undefined || a.max === undefined || a.min <= a.max, {
        message: 'min must not be above max',
        path: ['min'],
      })
      .optional(),
    /**
     * Steps of linear warm-up. Unset: 0 from scratch and with lr auto, 5 for a fixed lr from
     * model.checkpoint. With lr auto, the warm-up (and lr_decay) shape the update KL it aims at.
     */
    warmup_steps: z.number().int().min(0).optional(),
    /** Decay over each stage's progress: its steps done, or its wall-clock budget used (whichever is further). */
    lr_decay: z.enum(['constant', 'cosine', 'linear']).default('constant'),
    /** The decayed learning rate ends at min_lr_ratio * lr. */
    min_lr_ratio: z.number().min(0).max(1).default(0.1),
    weight_decay: z.number().min(0).default(0),
    /** Global gradient-norm clip (1 by default, from scratch and from a checkpoint). */
    grad_clip: z.number().positive().optional(),
    steps: z.number().int().positive().default(100),
  })
  .strict()
  .default({});
