// The run config's model and tokenizer sections (core/config.ts puts the sections together): a
// built-in size or a checkpoint, its context length, image input and LoRA, and a built-in size's tokenizer.
import { z } from 'zod';
import { LoraConfigSchema } from './lora-config.js';

/** The longest model.max_seq_len a run config may ask for (a 128k context). */
export const MAX_SEQ_LEN = 131_072;

export const modelSection = z
  .object({
    size: z.string().default('tiny-0.4m'),
    checkpoint: z.string().optional(),
    /**
     * The chat template of a Hugging Face model that has several (tokenizer_config.json's list of
     * {name, template}, additional_chat_templates/NAME.jinja): its name, or a .jinja file (relative
     * to this config). Unset: the model's default template (chat_template.jinja or the one named 'default').
     */
    chat_template: z.string().min(1).optional(),
    // The RoPE tables and the KV cache are sized by it: 1e9 failed as an unnamed typed-array error.
    max_seq_len: z
      .number()
      .int()
      .positive()
      .max(MAX_SEQ_LEN, `at most ${MAX_SEQ_LEN} tokens (the position tables and the KV cache are sized by it)`)
      .optional(),
    /**
     * Image input (workflow `vision`): images are cut into patch_size x patch_size tiles, each
     * projected to the model width and placed before the prompt. Workflow `vision` gets it by
     * default (patch_size 4, max_patches from the taskset's largest image).
     */
    vision: z
      .object({
        patch_size: z.number().int().positive().default(4),
        max_patches: z.number().int().positive().optional(),
      })
      .strict()
      .optional(),
    /** LoRA adapters instead of full fine-tuning: only the adapters train (backend/model/lora.ts). */
    lora: LoraConfigSchema.optional(),
  })
  .strict()
  // A checkpoint's own config sets its size (a size beside it would be ignored).
  .refine((m) => m.checkpoint === undefined || m.size === 'tiny-0.4m', {
    message: "not read with model.checkpoint (the checkpoint's config sets the size)",
    path: ['size'],
  })
  .default({});

export const tokenizerSection = z
  .object({
    kind: z.enum(['char', 'bpe']).default('char'),
    path: z.string().optional(),
    vocab_size: z.number().int().positive().optional(),
  })
  .strict()
  // A tokenizer file is the tokenizer; a char tokenizer has one token per character.
  .superRefine((t, ctx) => {
    const add = (k: string, message: string) => ctx.addIssue({ code: 'custom', path: [k], message });
    if (t.path !== undefined) {
      if (t.kind !== 'char') add('kind', 'not read with tokenizer.path (the file is the tokenizer)');
      if (t.vocab_size !== undefined) add('vocab_size', 'not read with tokenizer.path (the file is the tokenizer)');
    } else if (t.vocab_size !== undefined && t.kind !== 'bpe')
      add('vocab_size', 'read for kind bpe only (a char tokenizer has one token per character)');
  })
  .default({});
