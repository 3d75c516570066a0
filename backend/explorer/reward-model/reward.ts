// A trained reward model as a workflow's reward function: `reward_model:<checkpoint dir>`. The
// checkpoint must have a value head and its tokenizer; the reward is sigmoid(score) in 0..1, the raw
// score in the details. Sequences longer than the model are an infra failure (cannot be scored),
// not a zero.
import type { Task } from '../../core/types.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../model/chat.js';
import { loadCheckpoint } from '../../model/checkpoint.js';
import { inferenceOutsideHeap } from '../../model/external-weights.js';
import { InputError } from '../../core/errors.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import type { Transformer } from '../../model/transformer.js';
import type { RewardFn } from '../workflow.js';
import { scoreSequences } from './score.js';

export function rewardModelFn(model: Transformer, tok: Tokenizer): RewardFn {
  return async (task: Task, response: string) => {
    const seq = [...encodePrompt(tok, task.messages ?? taskMessages(task.prompt ?? '')), ...encodeResponse(tok, response)];
    if (seq.length > model.config.maxSeqLen) return { reward: 0, status: 'infra_failure', reason: `reward model: ${seq.length} tokens exceed its maxSeqLen ${model.config.maxSeqLen}` };
    const [s] = await scoreSequences(model, [seq], tok.padId);
    return { reward: 1 / (1 + Math.exp(-s!)), status: 'ok', details: { score: s! } };
  };
}

/** A reward model only scores: its projections, table and head load outside the wasm heap when the addon allows. */
export function loadRewardModel(dir: string): RewardFn {
  const ck = loadCheckpoint(dir, { external: inferenceOutsideHeap() });
  if (!ck.model.config.valueHead) {
    ck.model.dispose();
    throw new InputError('not a reward model: the checkpoint has no value head (config rft.valueHead)', { file: `${dir}/config.json` });
  }
  if (!ck.tokenizer) {
    ck.model.dispose();
    throw new InputError('a reward model checkpoint needs its tokenizer.json', { file: `${dir}/tokenizer.json` });
  }
  return rewardModelFn(ck.model, ck.tokenizer);
}
