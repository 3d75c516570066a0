// Held-out evaluation: greedy answers to eval tasks, scored by the taskset's reward function;
// accuracy counts answers with full reward, or, for a reward that judges correctness itself (a
// reward model: score at or above its threshold), the answers it judges correct; `accuracy_means`
// says which. Workflows other than single_turn (vision: the image
// prefix; multi_turn: the environment's episode and reward) are evaluated through the workflow
// itself, greedily, one sample per task.
import type { Task } from '../core/types.js';
import { encodePrompt, stopTokens, taskMessages } from '../model/chat.js';
import {
  workflowSampling,
  type RewardFn,
  type RewardResult,
  type RolloutModel,
  type Workflow,
} from '../explorer/workflow.js';
import { logger } from '../core/log.js';

const log = logger('eval');

export interface EvalResult {
  accuracy: number;
  /** What `accuracy` counts: 'full reward', or 'judged correct (…)' for a reward model (its threshold named). */
  accuracy_means: string;
  mean_reward: number;
  n: number;
  infra_failures: number;
}

export interface EvalOptions {
  maxNewTokens: number;
  batch?: number;
  /** The run's workflow: when it is not single_turn, eval tasks go through it. */
  workflow?: Workflow;
}

export async function evaluate(
  model: RolloutModel,
  tasks: Task[],
  reward: RewardFn,
  opts: EvalOptions,
): Promise<EvalResult> {
  const B = opts.batch ?? 64;
  const viaWorkflow = opts.workflow && opts.workflow.name !== 'single_turn' ? opts.workflow : undefined;
  const results: Pick<RewardResult, 'reward' | 'status' | 'correct' | 'details'>[] = [];
  for (let s = 0; s < tasks.length; s += B) {
    const chunk = tasks.slice(s, s + B);
    results.push(
      ...(viaWorkflow
        ? await scoreViaWorkflow(viaWorkflow, model, chunk, reward, opts.maxNewTokens, s)
        : await scoreSingleTurn(model, chunk, reward, opts.maxNewTokens)),
    );
  }
  let correct = 0;
  let sum = 0;
  let scored = 0;
  let infra = 0;
  let judged = 0;
  let threshold: unknown;
  for (const r of results) {
    // An answer the reward service could not score is left out, not counted as wrong.
    if (r.status === 'infra_failure') {
      infra++;
      continue;
    }
    scored++;
    sum += r.reward;
    if (r.correct !== undefined) {
      judged++;
      threshold ??= r.details?.threshold;
    }
    if (r.correct ?? r.reward >= 1 - 1e-9) correct++;
  }
  const means =
    judged === 0
      ? 'full reward'
      : `judged correct (reward model score >= its threshold${typeof threshold === 'number' ? ` ${threshold.toPrecision(4)}` : ''}; mean_reward is the mean sigmoid(score - threshold))`;
  return {
    accuracy: scored ? correct / scored : 0,
    accuracy_means: means,
    mean_reward: scored ? sum / scored : 0,
    n: scored,
    infra_failures: infra,
  };
}

/** `accuracy 0.400`, with what it counts when that is not full reward (a reward model's judgement). */
export function describeAccuracy(r: Pick<EvalResult, 'accuracy' | 'accuracy_means'>): string {
  return `accuracy ${r.accuracy.toFixed(3)}${r.accuracy_means === 'full reward' ? '' : ` = ${r.accuracy_means}`}`;
}

async function scoreSingleTurn(
  model: RolloutModel,
  chunk: Task[],
  reward: RewardFn,
  maxNewTokens: number,
): Promise<RewardResult[]> {
  const tok = model.tokenizer;
  const prompts = chunk.map((t) => encodePrompt(tok, t.messages ?? taskMessages(t.prompt ?? '')));
  // A prompt that leaves no room to answer is left out by name (counted in infra_failures), not the end of the evaluation.
  const limit = model.maxSeqLen;
  const fits = prompts.map((p) => limit === undefined || p.length < limit);
  fits.forEach(
    (ok, i) =>
      ok ||
      log.warn(
        `eval task '${chunk[i]!.id}': its prompt of ${prompts[i]!.length} tokens leaves no room in max_seq_len ${limit}; left out of the accuracy`,
      ),
  );
  const fitting = prompts.filter((_, i) => fits[i]);
  const gens = fitting.length
    ? await model.generate(fitting, { maxNewTokens, temperature: 0, stopTokens: stopTokens(tok) })
    : [];
  let g = 0;
  return Promise.all(
    chunk.map((t, i) =>
      fits[i] ? reward(t, gens[g++]!.text) : Promise.resolve<RewardResult>({ reward: 0, status: 'infra_failure' }),
    ),
  );
}

async function scoreViaWorkflow(
  wf: Workflow,
  model: RolloutModel,
  chunk: Task[],
  reward: RewardFn,
  maxNewTokens: number,
  offset: number,
): Promise<Pick<RewardResult, 'reward' | 'status' | 'correct' | 'details'>[]> {
  const exps = await wf.run(chunk, {
    model,
    reward,
    runId: 'eval',
    repeatTimes: 1,
    sampling: workflowSampling({ maxNewTokens, temperature: 0, topK: 0, topP: 1 }, model.tokenizer),
    step: offset,
    seed: 0,
    split: 'eval',
  });
  // An empty answer ('invalid') is a wrong answer here, as in the single-turn path.
  // A reward model's judgement travels in the experience's reward details (`correct`, `threshold`).
  return exps.map((e) => ({
    reward: e.reward,
    status: e.status === 'infra_failure' ? 'infra_failure' : 'ok',
    ...(typeof e.rewardDetails?.correct === 'boolean'
      ? { correct: e.rewardDetails.correct, details: e.rewardDetails }
      : {}),
  }));
}
