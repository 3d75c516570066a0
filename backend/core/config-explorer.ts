// The run config's explorer and workflow sections (core/config.ts puts the sections together): rollout
// sampling and its engine, held-out evaluation's greedy decode, partial rollouts, an OpenAI-compatible
// endpoint as the rollout model, and the workflow, reward and workspace code that make experiences.
import { z } from 'zod';

const samplingObject = z
  .object({
    max_new_tokens: z.number().int().positive().default(16),
    temperature: z.number().min(0).default(1),
    top_k: z.number().int().min(0).default(0),
    top_p: z.number().gt(0).max(1).default(1),
  })
  .strict();
const sampling = samplingObject.default({});
/** Held-out evaluations decode greedily (coordinator/setup/explorer.ts evalOptions): only max_new_tokens is read. */
const evalSampling = samplingObject
  .superRefine((s, ctx) => {
    for (const [k, dflt] of [
      ['temperature', 1],
      ['top_k', 0],
      ['top_p', 1],
    ] as const)
      if (s[k] !== dflt)
        ctx.addIssue({ code: 'custom', path: [k], message: 'evaluation is greedy: only max_new_tokens is read' });
  })
  .default({});

export const workflowSection = z
  // reward: the default reward function; a task's own `reward` field (format.reward_key) wins.
  // file: workspace code (.js/.mjs/.ts, relative to the config) whose default export registers
  // rewards / workflows by name (explorer/custom.ts); loaded only in a run started with trust.
  // code_timeout_seconds: the longest one call into the file's code (a reward, a workflow, an
  // environment step) may run, time waiting on the model excluded; past it the call is an
  // infra failure and a thread that stopped answering is stopped (explorer/user-code/host.ts). Default 60.
  .object({
    name: z.string().default('single_turn'),
    reward: z.string().optional(),
    file: z.string().min(1).optional(),
    code_timeout_seconds: z.number().positive().max(86_400).optional(),
  })
  .strict()
  .refine((w) => w.code_timeout_seconds === undefined || w.file !== undefined, {
    message: 'bounds the code of workflow.file: set file, or leave it out',
    path: ['code_timeout_seconds'],
  });

export const explorerSection = z
  .object({
    workers: z.number().int().positive().default(1),
    /**
     * What samples rollouts: this project's decode, llama.cpp on a GGUF export of each synced version, or
     * auto: per batch, whichever of the two this process measured faster at that batch size (each
     * experience records the engine and why in metadata.rollout_engine / rollout_engine_reason).
     */
    engine: z.enum(['native', 'llama-cpp', 'auto']).default('native'),
    /**
     * Where llama.cpp samples (engine llama-cpp or auto): auto takes the first of node-llama-cpp's
     * prebuilt GPU builds that finds a device (CUDA, Vulkan, Metal), else the CPU; off is the CPU;
     * a named backend that cannot start is an error at the first sync.
     */
    llama_cpp_gpu: z.enum(['auto', 'off', 'cuda', 'vulkan', 'metal']).default('auto'),
    tasks_per_step: z.number().int().positive().default(8),
    repeat_times: z.number().int().positive().default(8),
    sampling,
    eval_sampling: evalSampling,
    /**
     * Partial rollouts (Kimi k1.5): a trajectory gets at most max_tokens_per_step new tokens per explore
     * step; a longer one is stored unfinished (status partial) and continued in later steps with their
     * weights. loss_segments: all of a finished trajectory's tokens count in the loss, or (fresh) only
     * those sampled within buffer.max_staleness versions of the trainer's.
     */
    partial_rollout: z
      .object({
        max_tokens_per_step: z.number().int().positive(),
        loss_segments: z.enum(['all', 'fresh']).default('all'),
      })
      .strict()
      .optional(),
    /** An OpenAI-compatible chat endpoint as the rollout model (modes `explore` and `bench`). */
    endpoint: z
      .object({
        base_url: z.string().url(),
        model: z.string(),
        /** Name of the environment variable that holds the API key (never the key itself). */
        api_key_env: z.string().optional(),
        concurrency: z.number().int().positive().default(4),
        timeout_ms: z.number().int().positive().default(60_000),
      })
      .strict()
      .optional(),
  })
  .strict()
  // What the engine does not read: llama.cpp's device with this project's decode; rollout threads
  // with one llama.cpp context (auto reads workers: its native side runs on them).
  .superRefine((e, ctx) => {
    if (e.llama_cpp_gpu !== 'auto' && e.engine === 'native')
      ctx.addIssue({
        code: 'custom',
        path: ['llama_cpp_gpu'],
        message: "read with explorer.engine llama-cpp or auto only (engine native samples with this project's decode)",
      });
    if (e.engine === 'llama-cpp' && e.workers !== 1)
      ctx.addIssue({
        code: 'custom',
        path: ['workers'],
        message: 'not read with explorer.engine llama-cpp (one llama.cpp context samples every sequence)',
      });
  })
  .default({});
