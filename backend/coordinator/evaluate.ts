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
  /** null: no answer was scored (every one an infrastructure failure); `no_result` says why. */
  accuracy: number | null;
  /** What `accuracy` counts: 'full reward', or 'judged correct (…)' for a reward model (its threshold named). */
  accuracy_means: string;
  mean_reward: number | null;
  /** Answers scored: accuracy and mean_reward are over these. */
  n: number;
  /** Answers the reward could not score (left out of the accuracy, never counted as wrong). */
  infra_failures: number;
  /** The first infrastructure failure's reason (the reward's FILE:LINE where it names one). */
  first_infra_failure?: string;
  /** Present when accuracy is null: "no result: N infrastructure failures, first: …". */
  no_result?: string;
}

/**
 * Exit status of `rft run` / `rft resume` / `rft eval` when the work completed but an evaluation
 * (the final or the base one) scored no answer: every one was an infrastructure failure, so there is
 * no accuracy (the summary's *_no_result says why). 1 stays "failed", 2 "unknown command".
 */
export const EXIT_NO_RESULT = 3;

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
  const results: Pick<RewardResult, 'reward' | 'status' | 'correct' | 'details' | 'reason'>[] = [];
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
  let first: string | undefined;
  for (const r of results) {
    // An answer the reward service could not score is left out, not counted as wrong.
    if (r.status === 'infra_failure') {
      infra++;
      first ??= r.reason;
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
  const firstNote = first ? `, first: ${first.slice(0, 300)}` : '';
  return {
    // No answer scored is no result, never an accuracy of 0 (infrastructure failures are not wrong answers).
    accuracy: scored ? correct / scored : null,
    accuracy_means: means,
    mean_reward: scored ? sum / scored : null,
    n: scored,
    infra_failures: infra,
    ...(first ? { first_infra_failure: first } : {}),
    ...(scored
      ? {}
      : {
          no_result: tasks.length
            ? `no result: ${infra} infrastructure failure(s)${firstNote}`
            : 'no result: no eval task',
        }),
  };
}

/**
 * `accuracy 0.400`, with what it counts when that is not full reward (a reward model's judgement) and
 * the answers left out as infrastructure failures; an eval with none scored says `no result: …`.
 */
export function describeAccuracy(
  r: Pick<EvalResult, 'accuracy' | 'accuracy_means' | 'no_result'> & Partial<Pick<EvalResult, 'infra_failures'>>,
): string {
  if (r.accuracy === null) return r.no_result ?? 'no result';
  const infra = r.infra_failures ? ` (${r.infra_failures} infrastructure failure(s) left out)` : '';
  return `accuracy ${r.accuracy.toFixed(3)}${r.accuracy_means === 'full reward' ? '' : ` = ${r.accuracy_means}`}${infra}`;
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
      fits[i]
        ? reward(t, gens[g++]!.text)
        : Promise.resolve<RewardResult>({
            reward: 0,
            status: 'infra_failure',
            reason: `eval task '${t.id}': its prompt of ${prompts[i]!.length} tokens leaves no room in max_seq_len ${limit}`,
          }),
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
): Promise<Pick<RewardResult, 'reward' | 'status' | 'correct' | 'details' | 'reason'>[]> {
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
    ...(e.status === 'infra_failure' && e.statusReason ? { reason: e.statusReason } : {}),
    ...(typeof e.rewardDetails?.correct === 'boolean'
      ? { correct: e.rewardDetails.correct, details: e.rewardDetails }
      : {}),
  }));
}
