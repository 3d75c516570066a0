// Partial rollouts (Kimi k1.5; config explorer.partial_rollout): a trajectory gets at most
// `max_tokens_per_step` new tokens per explore step. One that is not finished by then is stored in
// the buffer with status `partial` (tokens, behaviour log-probs, and the weight version of each
// segment) and continued in a later step, with that step's weights, by re-feeding prompt + prefix.
// A group (GRPO) is released to the experience pipeline only when all its samples are finished, so
// group advantages always compare whole trajectories; until then its finished samples wait in the
// buffer as `partial` too (reward already computed, once, on the full text). Rows with status
// `partial` are never trainable (the stores' trainable column), so no sampler can take them.
import type { Experience, ExperienceStatus, Task } from '../core/types.js';
import type { RewardFn, RewardResult, RolloutModel, SamplingConfig, WorkflowSampling } from './workflow.js';

export interface PartialRolloutOptions {
  /** New tokens one trajectory may get in one explore step. */
  maxTokensPerStep: number;
  /** buffer.max_staleness: a released sample finished by weights older than this is not counted trainable. */
  maxStaleness?: number;
}

/** What a partial row keeps in `metadata.partial`. */
export interface PartialState {
  /** Finished and rewarded, waiting for the rest of its group. */
  finished: boolean;
  /** A finished sample's own status once its group is released. */
  status?: Exclude<ExperienceStatus, 'partial'>;
  reason?: string;
  /** The task (its reward needs it when the trajectory finishes, possibly in another process). */
  task?: Task;
  /** Continuations that failed for infrastructure reasons (bounded, then infra_failure). */
  failures?: number;
}

/** Continuations lost to infrastructure failures before the trajectory is given up as infra_failure. */
export const MAX_CONTINUATION_FAILURES = 3;

export function partialState(e: Experience): PartialState | undefined {
  const p = e.metadata?.partial;
  return p && typeof p === 'object' ? (p as PartialState) : undefined;
}

/** A stored trajectory still to be continued. */
export function isUnfinished(e: Experience): boolean {
  return e.status === 'partial' && partialState(e)?.finished !== true;
}

/**
 * Whether a generation cut by length may go on: it stopped on the step budget, not on the run's
 * max_new_tokens nor the model's context.
 */
export function canContinue(
  finish: string,
  promptLen: number,
  responseLen: number,
  sampling: SamplingConfig,
  maxSeqLen: number | undefined,
): boolean {
  return (
    finish === 'length' &&
    responseLen < sampling.maxNewTokens &&
    (maxSeqLen === undefined || promptLen + responseLen < maxSeqLen)
  );
}

/** The row of a trajectory cut at the step budget. */
export function markUnfinished(e: Experience, task: Task, failures = 0): Experience {
  const { rewardDetails: _r, ...rest } = e;
  return {
    ...rest,
    status: 'partial',
    reward: 0,
    statusReason: `partial rollout: ${e.responseTokens.length} tokens so far`,
    metadata: {
      ...(e.metadata ?? {}),
      partial: { finished: false, task, ...(failures ? { failures } : {}) } satisfies PartialState,
    },
  };
}

export interface ContinueContext {
  model: RolloutModel;
  reward: RewardFn;
  sampling: WorkflowSampling;
  budget: number;
  step: number;
  seed: number;
  signal?: AbortSignal;
}

export interface ContinueResult {
  experiences: Experience[];
  /** New tokens generated per continued trajectory (same order as the input). */
  newTokens: number[];
}

/**
 * Continues stored unfinished trajectories with `ctx.model` by at most `ctx.budget` tokens each: the
 * prompt plus the generated prefix is fed again, the new tokens and their behaviour log-probs are
 * appended with a segment of the model's version. A trajectory that finishes gets its reward once,
 * on the whole response text (decoded from all its tokens).
 */
export async function continuePartials(exps: Experience[], ctx: ContinueContext): Promise<ContinueResult> {
  const tok = ctx.model.tokenizer;
  const maxSeqLen = ctx.model.maxSeqLen;
  // Rows grouped by how many tokens each may get now, so no row is cut short by another's lack of room.
  const allow = exps.map((e) => {
    const P = e.promptTokens.length;
    const R = e.responseTokens.length;
    return Math.min(ctx.budget, ctx.sampling.maxNewTokens - R, maxSeqLen === undefined ? Infinity : maxSeqLen - P - R);
  });
  const byAllow = new Map<number, number[]>();
  allow.forEach((a, i) => {
    if (a <= 0)
      throw new Error(`partial rollout ${exps[i]!.id}: no tokens left to generate (it should have been finished)`);
    byAllow.set(a, [...(byAllow.get(a) ?? []), i]);
  });
  const gens = new Array<Awaited<ReturnType<RolloutModel['generate']>>[number]>(exps.length);
  let k = 0;
  for (const [a, idx] of byAllow) {
    const prompts = idx.map((i) => [...exps[i]!.promptTokens, ...exps[i]!.responseTokens]);
    const out = await ctx.model.generate(prompts, {
      ...ctx.sampling,
      maxNewTokens: a,
      seed: (ctx.seed + 7919 * k++) >>> 0,
    });
    idx.forEach((i, j) => (gens[i] = out[j]!));
  }
  const version = ctx.model.version;
  const results = await Promise.all(
    exps.map(async (e, i): Promise<Experience> => {
      const g = gens[i]!;
      const st = partialState(e) ?? { finished: false };
      const task = st.task;
      if (!task) throw new Error(`partial rollout ${e.id}: no task stored with it (metadata.partial.task)`);
      if (g.infraError) {
        // The sample could not be continued now (worker lost): the stored prefix stays for the next step, a bounded number of times.
        const failures = (st.failures ?? 0) + 1;
        if (failures < MAX_CONTINUATION_FAILURES) return markUnfinished(e, task, failures);
        return finish(e, task, { reward: 0, status: 'infra_failure', reason: `rollout: ${g.infraError}` }, 'error');
      }
      const R = e.responseTokens.length;
      const tokens = [...e.responseTokens, ...g.tokens];
      const next: Experience = {
        ...e,
        responseTokens: tokens,
        responseText: tok.decode(tokens, { skipSpecial: true }),
        actionMask: [...e.actionMask, ...g.tokens.map(() => 1)],
        logprobs: [...e.logprobs, ...g.logprobs],
        modelVersion: g.tokens.length ? version : e.modelVersion,
        segments: g.tokens.length
          ? [...(e.segments ?? []), { version, start: R, end: tokens.length, step: ctx.step }]
          : e.segments,
        createdAt: Date.now(),
        ...(g.logprobsSource ? { metadata: { ...(e.metadata ?? {}), logprobs_source: g.logprobsSource } } : {}),
      };
      if (
        g.finishReason === 'length' &&
        canContinue('length', e.promptTokens.length, tokens.length, ctx.sampling, maxSeqLen)
      )
        return markUnfinished(next, task);
      let r: RewardResult;
      try {
        r = await ctx.reward(task, next.responseText, { signal: ctx.signal });
      } catch (err) {
        r = { reward: 0, status: 'infra_failure', reason: `reward function threw: ${(err as Error).message}` };
      }
      return finish(next, task, r, g.finishReason);
    }),
  );
  return { experiences: results, newTokens: gens.map((g) => (g.infraError ? 0 : g.tokens.length)) };
}

/** A finished trajectory with its reward (status as the single-turn workflow sets it); metadata.partial dropped. */
function finish(e: Experience, _task: Task, r: RewardResult, finishReason: string): Experience {
  const { partial: _p, ...metadata } = e.metadata ?? {};
  const empty = e.responseTokens.length === 0;
  const { statusReason: _s, metadata: _m, ...rest } = e;
  return {
    ...rest,
    reward: r.reward,
    rewardDetails: { ...(r.details ?? {}), finish: finishReason },
    status: r.status === 'infra_failure' ? 'infra_failure' : empty ? 'invalid' : 'ok',
    ...(r.status === 'infra_failure' ? { statusReason: r.reason } : empty ? { statusReason: 'empty response' } : {}),
    ...(Object.keys(metadata).length ? { metadata } : {}),
  };
}

/**
 * Groups whose samples are all finished are released (their waiting samples get their own status
 * back); in a group with an unfinished sample, the finished ones wait as `partial` rows.
 */
export function settleGroups(exps: Experience[]): { complete: Experience[]; waiting: Experience[] } {
  const groups = new Map<string, Experience[]>();
  for (const e of exps) groups.set(e.groupId, [...(groups.get(e.groupId) ?? []), e]);
  const complete: Experience[] = [];
  const waiting: Experience[] = [];
  for (const members of groups.values()) {
    if (members.some(isUnfinished)) waiting.push(...members.map(hold));
    else complete.push(...members.map(release));
  }
  return { complete, waiting };
}

function hold(e: Experience): Experience {
  if (e.status === 'partial') return e;
  return {
    ...e,
    status: 'partial',
    statusReason: 'finished; waiting for the rest of its group',
    metadata: {
      ...(e.metadata ?? {}),
      partial: {
        finished: true,
        status: e.status,
        ...(e.statusReason !== undefined ? { reason: e.statusReason } : {}),
      } satisfies PartialState,
    },
  };
}

function release(e: Experience): Experience {
  const st = partialState(e);
  if (e.status !== 'partial' || !st?.finished) return e;
  const { partial: _p, ...metadata } = e.metadata ?? {};
  const { statusReason: _s, metadata: _m, ...rest } = e;
  return {
    ...rest,
    status: st.status ?? 'ok',
    ...(st.reason !== undefined ? { statusReason: st.reason } : {}),
    ...(Object.keys(metadata).length ? { metadata } : {}),
  };
}
