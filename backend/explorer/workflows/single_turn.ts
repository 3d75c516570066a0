// Single-turn workflow: the prompt is one user message, the model answers once, the reward model
// scores the answer. All samples of all tasks in the batch are generated together.
import type { Experience, Task } from '../../core/types.js';
import type { tf } from '../../model/engine.js';
import { encodePrompt, taskMessages } from '../../model/chat.js';
import { generationMetadata, newExperienceId, type Workflow, type WorkflowContext } from '../workflow.js';
import { canContinue, markUnfinished } from '../partial.js';

export interface SingleTurnExtras {
  /** Prefix embeddings per sample row [tasks x repeatTimes, P, D] (vision). */
  prefix?: tf.Tensor3D;
  /** Extra experience metadata per task (what the trainer needs to rebuild the input, e.g. the image). */
  metadata?: (task: Task) => Record<string, unknown>;
}

export async function runSingleTurn(
  tasks: Task[],
  ctx: WorkflowContext,
  extras: SingleTurnExtras = {},
): Promise<Experience[]> {
  const tok = ctx.model.tokenizer;
  const version = ctx.model.version;
  const prompts: number[][] = [];
  const owners: Task[] = [];
  for (const task of tasks) {
    const messages = task.messages ?? taskMessages(task.prompt ?? '');
    const ids = encodePrompt(tok, messages);
    for (let r = 0; r < ctx.repeatTimes; r++) {
      prompts.push(ids);
      owners.push(task);
    }
  }
  const budget = ctx.partialBudget;
  const maxNewTokens = budget === undefined ? ctx.sampling.maxNewTokens : Math.min(budget, ctx.sampling.maxNewTokens);
  const gens = await ctx.model.generate(prompts, {
    ...ctx.sampling,
    maxNewTokens,
    seed: ctx.seed,
    prefix: extras.prefix,
  });
  // Partial rollouts: a sample cut at the step budget (not at max_new_tokens) goes on in a later step; no reward yet.
  const cut = gens.map(
    (g, i) =>
      budget !== undefined &&
      !g.infraError &&
      canContinue(g.finishReason, prompts[i]!.length, g.tokens.length, ctx.sampling, ctx.model.maxSeqLen),
  );
  const rewards = await Promise.all(
    gens.map(async (g, i) => {
      if (cut[i]) return { reward: 0, status: 'ok' as const };
      // No sample was produced (endpoint down, worker lost): nothing to score.
      if (g.infraError) return { reward: 0, status: 'infra_failure' as const, reason: `rollout: ${g.infraError}` };
      try {
        return await ctx.reward(owners[i]!, g.text, { signal: ctx.signal });
      } catch (e) {
        // The reward model crashed: the system failed, not the sample.
        return {
          reward: 0,
          status: 'infra_failure' as const,
          reason: `reward function threw: ${(e as Error).message}`,
        };
      }
    }),
  );
  const now = Date.now();
  return gens.map((g, i): Experience => {
    const task = owners[i]!;
    const r = rewards[i]!;
    const empty = g.tokens.length === 0;
    const e: Experience = {
      id: newExperienceId(),
      taskId: task.id,
      groupId: `${ctx.runId}:${ctx.split}:${ctx.step}:${task.id}`,
      runId: ctx.runId,
      source: 'usual',
      promptTokens: prompts[i]!,
      promptText: task.prompt ?? (task.messages ?? []).map((m) => m.content).join('\n'),
      responseTokens: g.tokens,
      responseText: g.text,
      actionMask: g.tokens.map(() => 1),
      logprobs: g.logprobs,
      modelVersion: version,
      reward: r.reward,
      rewardDetails: { ...(r.details ?? {}), finish: g.finishReason },
      status: r.status === 'infra_failure' ? 'infra_failure' : empty ? 'invalid' : 'ok',
      statusReason: r.status === 'infra_failure' ? r.reason : empty ? 'empty response' : undefined,
      useCount: 0,
      createdAt: now,
      split: ctx.split,
      ...(extras.metadata || g.logprobsSource || g.rolloutEngine
        ? { metadata: { ...extras.metadata?.(task), ...generationMetadata(g) } }
        : {}),
      ...(budget !== undefined && g.tokens.length
        ? { segments: [{ version, start: 0, end: g.tokens.length, step: ctx.step }] }
        : {}),
    };
    return cut[i] ? markUnfinished(e, task) : e;
  });
}

export const singleTurn: Workflow = { name: 'single_turn', run: (tasks, ctx) => runSingleTurn(tasks, ctx) };
