// Multi-turn workflow: the model and an environment take turns until the environment ends the
// episode (or the turn / length budget runs out). One experience per episode:
//   promptTokens   = the task's prompt (ending with <|assistant|>)
//   responseTokens = model turn, <|environment|>obs<|end|><|assistant|>, model turn, ...
//   actionMask     = 1 on the model's tokens, 0 on the environment's (never trained on)
//   logprobs       = behaviour log-probs on model tokens, 0 on environment tokens
// The reward is the sum of the environment's rewards (the context's reward function is not used).
// All live episodes of the batch generate their next turn together.
import type { Experience, Task } from '../../core/types.js';
import { encodeMessage, encodePrompt, taskMessages } from '../../model/chat.js';
import { environments, type EnvSession } from '../environments/index.js';
import {
  generationMetadata,
  newExperienceId,
  type RolloutGeneration,
  type Workflow,
  type WorkflowContext,
} from '../workflow.js';

export const DEFAULT_MAX_TURNS = 8;

interface Episode {
  task: Task;
  env: EnvSession;
  prompt: number[];
  tokens: number[];
  mask: number[];
  logprobs: number[];
  text: string[];
  reward: number;
  turns: number;
  done: boolean;
  end: 'env_done' | 'max_turns' | 'max_length' | 'infra' | 'env_error';
  error?: string;
  info: Record<string, number | string | boolean>;
  logprobsSource?: 'engine' | 'recomputed';
  rolloutEngine?: RolloutGeneration['rolloutEngine'];
}

export const multiTurn: Workflow = {
  name: 'multi_turn',
  async run(tasks: Task[], ctx: WorkflowContext): Promise<Experience[]> {
    const tok = ctx.model.tokenizer;
    const version = ctx.model.version;
    const endId = tok.specialId('end');
    const episodes: Episode[] = [];
    for (const task of tasks) {
      const envName = task.metadata?.environment;
      if (typeof envName !== 'string')
        throw new Error(
          `multi_turn: task ${task.id} has no metadata.environment (one of: ${environments.names().join(', ')})`,
        );
      const env = environments.get(envName);
      const prompt = encodePrompt(tok, task.messages ?? taskMessages(task.prompt ?? ''));
      for (let r = 0; r < ctx.repeatTimes; r++) {
        const ep: Episode = {
          task,
          env: undefined as unknown as EnvSession,
          prompt,
          tokens: [],
          mask: [],
          logprobs: [],
          text: [],
          reward: 0,
          turns: 0,
          done: false,
          end: 'max_turns',
          info: {},
        };
        try {
          ep.env = env.create(task);
        } catch (e) {
          ep.done = true;
          ep.end = 'env_error';
          ep.error = (e as Error).message;
        }
        episodes.push(ep);
      }
    }
    const maxTurns = Number(ctx.maxTurns ?? DEFAULT_MAX_TURNS);
    for (let turn = 0; turn < maxTurns; turn++) {
      const live = episodes.filter((e) => !e.done);
      if (live.length === 0) break;
      // Stop an episode that has no room left for another full turn.
      const fits = live.filter((e) => {
        const ok =
          ctx.model.maxSeqLen === undefined ||
          e.prompt.length + e.tokens.length + ctx.sampling.maxNewTokens <= ctx.model.maxSeqLen;
        if (!ok) {
          e.done = true;
          e.end = 'max_length';
        }
        return ok;
      });
      if (fits.length === 0) break;
      const gens = await ctx.model.generate(
        fits.map((e) => [...e.prompt, ...e.tokens]),
        { ...ctx.sampling, seed: ctx.seed + turn * 7919 },
      );
      gens.forEach((g, i) => {
        const e = fits[i]!;
        if (g.infraError) {
          e.done = true;
          e.end = 'infra';
          e.error = g.infraError;
          return;
        }
        e.turns++;
        e.tokens.push(...g.tokens);
        e.mask.push(...g.tokens.map(() => 1));
        e.logprobs.push(...g.logprobs);
        // One recomputed turn makes the episode's log-probs recomputed.
        if (g.logprobsSource && e.logprobsSource !== 'recomputed') e.logprobsSource = g.logprobsSource;
        if (g.rolloutEngine) e.rolloutEngine = g.rolloutEngine;
        // Close an unfinished turn so the layout stays well-formed; the marker is not the model's.
        if (g.tokens[g.tokens.length - 1] !== endId) {
          e.tokens.push(endId);
          e.mask.push(0);
          e.logprobs.push(0);
        }
        e.text.push(g.text);
        let st;
        try {
          st = e.env.step(g.text);
        } catch (err) {
          e.done = true;
          e.end = 'env_error';
          e.error = (err as Error).message;
          return;
        }
        e.reward += st.reward;
        Object.assign(e.info, st.info ?? {});
        if (st.done) {
          e.done = true;
          e.end = 'env_done';
          return;
        }
        const obs = [
          ...encodeMessage(tok, { role: 'environment', content: st.observation ?? '' }),
          tok.specialId('assistant'),
        ];
        // The whole episode must fit the model (the trainer sees it as one sequence).
        if (
          ctx.model.maxSeqLen !== undefined &&
          e.prompt.length + e.tokens.length + obs.length + ctx.sampling.maxNewTokens > ctx.model.maxSeqLen
        ) {
          e.done = true;
          e.end = 'max_length';
          return;
        }
        e.tokens.push(...obs);
        e.mask.push(...obs.map(() => 0));
        e.logprobs.push(...obs.map(() => 0));
        e.text.push(`[env] ${st.observation ?? ''}`);
      });
    }
    const now = Date.now();
    return episodes.map((e): Experience => {
      // An environment that crashed or a rollout that failed is the system's fault, not the model's.
      const infra = e.end === 'infra' || e.end === 'env_error';
      return {
        id: newExperienceId(),
        taskId: e.task.id,
        groupId: `${ctx.runId}:${ctx.split}:${ctx.step}:${e.task.id}`,
        runId: ctx.runId,
        source: 'usual',
        promptTokens: e.prompt,
        promptText: e.task.prompt ?? (e.task.messages ?? []).map((m) => m.content).join('\n'),
        responseTokens: e.tokens,
        responseText: e.text.join('\n'),
        actionMask: e.mask,
        logprobs: e.logprobs,
        modelVersion: version,
        reward: infra ? 0 : e.reward,
        rewardDetails: { ...e.info, turns: e.turns, end: e.end },
        ...(e.logprobsSource || e.rolloutEngine ? { metadata: generationMetadata(e) } : {}),
        status: infra ? 'infra_failure' : e.turns === 0 ? 'invalid' : 'ok',
        statusReason: infra ? `${e.end}: ${e.error ?? ''}` : e.turns === 0 ? 'no turn fitted in the model' : undefined,
        useCount: 0,
        createdAt: now,
        split: ctx.split,
      };
    });
  },
};
