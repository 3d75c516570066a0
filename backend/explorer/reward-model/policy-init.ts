// A reward model started from a policy checkpoint instead of random weights: the policy's layers
// (LoRA adapters merged) under a fresh value head. A model trained from scratch on a few hundred
// pairs only learns what those pairs show on their surface: it cannot tell a right sum from a wrong
// one on a task it never saw (issue 25: 0.42 on unseen arithmetic tasks). A policy that does the
// task already represents it; the head only has to read it out. The policy's own mean log-prob of
// an answer is the baseline such a model must beat.
import { tf } from '../../model/engine.js';
import { loadCheckpoint } from '../../model/checkpoint.js';
import { tokenLogprobs } from '../../model/logprobs.js';
import { Transformer } from '../../model/transformer.js';
import { InputError } from '../../core/errors.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import type { PreferencePair } from './data.js';

export interface PolicyInit {
  /** The reward model: the policy's weights, a fresh value head. */
  model: Transformer;
  /** The policy itself (its log-probs are the baseline); the caller disposes both. */
  policy: Transformer;
}

export function rewardModelFromPolicy(dir: string, tok: Tokenizer, seed: number): PolicyInit {
  const ck = loadCheckpoint(dir);
  const policy = ck.model;
  if (ck.tokenizer && ck.tokenizer.vocabSize !== tok.vocabSize) {
    policy.dispose();
    throw new InputError(
      `the policy's tokenizer has ${ck.tokenizer.vocabSize} tokens, the run's ${tok.vocabSize}: a reward model must read the run's token ids`,
      { file: `${dir}/tokenizer.json` },
    );
  }
  if (policy.config.vision) {
    policy.dispose();
    throw new InputError('a vision policy cannot start a reward model (text pairs only)', {
      file: `${dir}/config.json`,
    });
  }
  const model = new Transformer({ ...policy.config, valueHead: true }, seed);
  for (const [name, v] of model.params) {
    if (name.startsWith('value_head.')) continue;
    const w = policy.effectiveWeight(name);
    v.assign(w);
    if (w !== policy.params.get(name)) w.dispose();
  }
  return { model, policy };
}

/** The policy's mean log-prob per answer token of each pair's chosen and rejected answer. */
export async function policyLogprobScores(
  policy: Transformer,
  pairs: PreferencePair[],
  padId: number,
  batch = 16,
): Promise<{ chosen: number[]; rejected: number[] }> {
  const seqs = pairs.flatMap((p) => [
    { prompt: p.prompt, answer: p.chosen },
    { prompt: p.prompt, answer: p.rejected },
  ]);
  const out: number[] = [];
  for (let i = 0; i < seqs.length; i += batch) {
    const chunk = seqs.slice(i, i + batch);
    const T = Math.max(...chunk.map((s) => s.prompt.length + s.answer.length));
    const ids = new Int32Array(chunk.length * T).fill(padId);
    const mask = new Float32Array(chunk.length * T);
    chunk.forEach((s, b) =>
      [...s.prompt, ...s.answer].forEach((t, j) => ((ids[b * T + j] = t), (mask[b * T + j] = 1))),
    );
    const idsT = tf.tensor2d(ids, [chunk.length, T], 'int32');
    const maskT = tf.tensor2d(mask, [chunk.length, T]);
    const lp = tf.tidy(() => tokenLogprobs(policy, idsT, { attentionMask: maskT }).logprobs);
    const v = (await lp.data()) as Float32Array;
    idsT.dispose();
    maskT.dispose();
    lp.dispose();
    // Position j predicts token j + 1: the answer's tokens are predicted from prompt.length - 1 on.
    chunk.forEach((s, b) => {
      let sum = 0;
      for (let j = s.prompt.length - 1; j < s.prompt.length + s.answer.length - 1; j++) sum += v[b * (T - 1) + j]!;
      out.push(sum / Math.max(1, s.answer.length));
    });
  }
  return { chosen: out.filter((_, i) => i % 2 === 0), rejected: out.filter((_, i) => i % 2 === 1) };
}
