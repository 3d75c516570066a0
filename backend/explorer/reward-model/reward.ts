// A trained reward model as a workflow's reward function: `reward_model:<checkpoint dir>`. The
// checkpoint must have a value head and its tokenizer; the reward is sigmoid(score - threshold) in
// 0..1 (threshold: rft.json's rewardModel.threshold, fitted by `rft reward-model train` on its
// validation pairs; 0 for a checkpoint without one), and an answer at or above the threshold is
// `correct` (what an eval's accuracy counts: a reward model never gives full reward). The raw score
// and threshold are in the details. Sequences longer than the model are an infra failure (cannot be
// scored), not a zero.
import type { Task } from '../../core/types.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../model/chat.js';
import { loadCheckpoint } from '../../model/checkpoint.js';
import { inferenceOutsideHeap } from '../../model/external-weights.js';
import { InputError } from '../../core/errors.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import type { Transformer } from '../../model/transformer.js';
import type { RewardFn } from '../workflow.js';
import { scoreSequences } from './score.js';

export function rewardModelFn(model: Transformer, tok: Tokenizer, threshold = 0): RewardFn {
  return async (task: Task, response: string) => {
    const seq = [
      ...encodePrompt(tok, task.messages ?? taskMessages(task.prompt ?? '')),
      ...encodeResponse(tok, response),
    ];
    if (seq.length > model.config.maxSeqLen)
      return {
        reward: 0,
        status: 'infra_failure',
        reason: `reward model: ${seq.length} tokens exceed its maxSeqLen ${model.config.maxSeqLen}`,
      };
    const [s] = await scoreSequences(model, [seq], tok.padId);
    return {
      reward: 1 / (1 + Math.exp(-(s! - threshold))),
      status: 'ok',
      correct: s! >= threshold,
      details: { score: s!, threshold, correct: s! >= threshold },
    };
  };
}

/** A reward model only scores: its projections, table and head load outside the wasm heap when the addon allows. */
export function loadRewardModel(dir: string): RewardFn {
  const ck = loadCheckpoint(dir, { external: inferenceOutsideHeap() });
  if (!ck.model.config.valueHead) {
    ck.model.dispose();
    throw new InputError('not a reward model: the checkpoint has no value head (config rft.valueHead)', {
      file: `${dir}/config.json`,
    });
  }
  if (!ck.tokenizer) {
    ck.model.dispose();
    throw new InputError('a reward model checkpoint needs its tokenizer.json', { file: `${dir}/tokenizer.json` });
  }
  const t = (ck.meta.rewardModel as { threshold?: unknown } | undefined)?.threshold;
  if (t !== undefined && !(typeof t === 'number' && Number.isFinite(t))) {
    ck.model.dispose();
    throw new InputError(`expected a finite number, got ${JSON.stringify(t)}`, {
      file: `${dir}/rft.json`,
      field: 'rewardModel.threshold',
    });
  }
  return rewardModelFn(ck.model, ck.tokenizer, t ?? 0);
}
