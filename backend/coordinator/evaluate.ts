// Held-out evaluation: greedy answers to eval tasks, scored by the taskset's reward function;
// accuracy counts answers with full reward.
import type { Task } from '../core/types.js';
import { encodePrompt, stopTokens, taskMessages } from '../model/chat.js';
import type { RewardFn, RolloutModel } from '../explorer/workflow.js';

export interface EvalResult {
  accuracy: number;
  mean_reward: number;
  n: number;
  infra_failures: number;
}

export async function evaluate(model: RolloutModel, tasks: Task[], reward: RewardFn, opts: { maxNewTokens: number; batch?: number }): Promise<EvalResult> {
  const tok = model.tokenizer;
  const B = opts.batch ?? 64;
  let correct = 0;
  let sum = 0;
  let scored = 0;
  let infra = 0;
  for (let s = 0; s < tasks.length; s += B) {
    const chunk = tasks.slice(s, s + B);
    const gens = await model.generate(
      chunk.map((t) => encodePrompt(tok, t.messages ?? taskMessages(t.prompt ?? ''))),
      { maxNewTokens: opts.maxNewTokens, temperature: 0, stopTokens: stopTokens(tok) },
    );
    const rs = await Promise.all(gens.map((g, i) => reward(chunk[i]!, g.text)));
    for (const r of rs) {
      // An answer the reward service could not score is left out, not counted as wrong.
      if (r.status === 'infra_failure') {
        infra++;
        continue;
      }
      scored++;
      sum += r.reward;
      if (r.reward >= 1 - 1e-9) correct++;
    }
  }
  return { accuracy: scored ? correct / scored : 0, mean_reward: scored ? sum / scored : 0, n: scored, infra_failures: infra };
}
