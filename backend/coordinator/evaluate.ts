// Held-out evaluation: greedy answers to eval tasks, scored by the taskset's reward function;
// accuracy counts answers with full reward. Workflows other than single_turn (vision: the image
// prefix; multi_turn: the environment's episode and reward) are evaluated through the workflow
// itself, greedily, one sample per task.
import type { Task } from '../core/types.js';
import { encodePrompt, stopTokens, taskMessages } from '../model/chat.js';
import type { RewardFn, RewardResult, RolloutModel, Workflow } from '../explorer/workflow.js';

export interface EvalResult {
  accuracy: number;
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

export async function evaluate(model: RolloutModel, tasks: Task[], reward: RewardFn, opts: EvalOptions): Promise<EvalResult> {
  const B = opts.batch ?? 64;
  const viaWorkflow = opts.workflow && opts.workflow.name !== 'single_turn' ? opts.workflow : undefined;
  const results: Pick<RewardResult, 'reward' | 'status'>[] = [];
  for (let s = 0; s < tasks.length; s += B) {
    const chunk = tasks.slice(s, s + B);
    results.push(...(viaWorkflow ? await scoreViaWorkflow(viaWorkflow, model, chunk, reward, opts.maxNewTokens, s) : await scoreSingleTurn(model, chunk, reward, opts.maxNewTokens)));
  }
  let correct = 0;
  let sum = 0;
  let scored = 0;
  let infra = 0;
  for (const r of results) {
    // An answer the reward service could not score is left out, not counted as wrong.
    if (r.status === 'infra_failure') {
      infra++;
      continue;
    }
    scored++;
    sum += r.reward;
    if (r.reward >= 1 - 1e-9) correct++;
  }
  return { accuracy: scored ? correct / scored : 0, mean_reward: scored ? sum / scored : 0, n: scored, infra_failures: infra };
}

async function scoreSingleTurn(model: RolloutModel, chunk: Task[], reward: RewardFn, maxNewTokens: number): Promise<RewardResult[]> {
  const tok = model.tokenizer;
  const gens = await model.generate(
    chunk.map((t) => encodePrompt(tok, t.messages ?? taskMessages(t.prompt ?? ''))),
    { maxNewTokens, temperature: 0, stopTokens: stopTokens(tok) },
  );
  return Promise.all(gens.map((g, i) => reward(chunk[i]!, g.text)));
}

async function scoreViaWorkflow(wf: Workflow, model: RolloutModel, chunk: Task[], reward: RewardFn, maxNewTokens: number, offset: number): Promise<Pick<RewardResult, 'reward' | 'status'>[]> {
  const exps = await wf.run(chunk, {
    model,
    reward,
    runId: 'eval',
    repeatTimes: 1,
    sampling: { maxNewTokens, temperature: 0, topK: 0, topP: 1 },
    step: offset,
    seed: 0,
    split: 'eval',
  });
  // An empty answer ('invalid') is a wrong answer here, as in the single-turn path.
  return exps.map((e) => ({ reward: e.reward, status: e.status === 'infra_failure' ? 'infra_failure' : 'ok' }));
}
