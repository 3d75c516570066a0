// `model.lora` of a run config: LoRA adapters instead of full fine-tuning (backend/model/lora.ts).
// Here in core so the run config's schema and the model share one definition.
import { z } from 'zod';

export const LORA_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type LoraTarget = (typeof LORA_TARGETS)[number];

export const LoraConfigSchema = z
  .object({
    rank: z.number().int().positive(),
    /** Scale alpha / rank on the adapter's output; PEFT's lora_alpha (default: 2 x rank). */
    alpha: z.number().positive().optional(),
    /** Dropout on the adapter's input while training (never when sampling or scoring). */
    dropout: z.number().min(0).lt(1).default(0),
    /** The projections that get adapters (default: all seven). */
    target_modules: z
      .array(z.enum(LORA_TARGETS))
      .nonempty()
      .default([...LORA_TARGETS]),
  })
  .strict();
export type LoraConfigInput = z.input<typeof LoraConfigSchema>;
