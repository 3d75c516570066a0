// Timing of one training step (loss, backward, AdamW) and of KV-cache generation, shared by
// `npm run bench -- model` (the CPU engine) and `npm run bench -- gpu` (webgpu): the same loops, so the
// two benches measure the same work.
import { tf } from '../backend/model/engine.js';
import type { ModelConfig } from '../backend/model/config.js';
import { Transformer } from '../backend/model/transformer.js';
import { lmLoss } from '../backend/model/logprobs.js';
import { AdamW } from '../backend/model/optim.js';
import { generate } from '../backend/model/generate.js';
import { Rng } from '../backend/core/rng.js';
import { SPECIAL_TOKENS, type SpecialTokenName, type Tokenizer } from '../backend/model/tokenizer/types.js';
import { median } from './report.js';

export interface Repeats {
  reps: number;
  warmup: number;
}

/** Generation here needs only ids; a tokenizer that decodes nothing keeps text work out of the timing. */
export function idsOnly(vocab: number): Tokenizer {
  return {
    kind: 'char',
    vocabSize: vocab,
    padId: 0,
    bosId: 1,
    eosId: 2,
    specialId: (n: SpecialTokenName) => Object.keys(SPECIAL_TOKENS).indexOf(n),
    encode: () => [],
    decode: () => '',
    toJSON: () => ({}),
  };
}

/** Tokens per second of one training step on B x T random ids (median of `reps` after `warmup`). */
export async function trainTokensPerSecond(cfg: ModelConfig, B: number, T: number, r: Repeats): Promise<number> {
  const m = new Transformer(cfg, 1);
  const opt = new AdamW(m.variables(), { lr: 1e-3 });
  const rng = new Rng(1);
  const data = Int32Array.from({ length: B * (T + 1) }, () => rng.int(8, cfg.vocabSize));
  const ids = tf.tensor2d(data, [B, T + 1], 'int32');
  const mask = tf.ones([B, T]) as tf.Tensor2D;
  const times: number[] = [];
  for (let i = 0; i < r.warmup + r.reps; i++) {
    const t0 = performance.now();
    const { value, grads } = tf.variableGrads(() => lmLoss(m, ids, mask));
    opt.step(grads);
    await value.data(); // on a GPU this also drains the queue: the step's work is done
    tf.dispose([value, ...Object.values(grads)]);
    if (i >= r.warmup) times.push(performance.now() - t0);
  }
  tf.dispose([ids, mask]);
  opt.dispose();
  m.dispose();
  return (B * T) / (median(times) / 1000);
}

/** Tokens per second of sampling `gen.newTokens` after `gen.promptLen` random ids, `gen.batch` sequences. */
export async function genTokensPerSecond(
  cfg: ModelConfig,
  gen: { batch: number; promptLen: number; newTokens: number },
  r: Repeats,
): Promise<number> {
  const m = new Transformer(cfg, 2);
  const rng = new Rng(2);
  const tok = idsOnly(cfg.vocabSize);
  const times: number[] = [];
  for (let i = 0; i < r.warmup + r.reps; i++) {
    const prompts = Array.from({ length: gen.batch }, () =>
      Array.from({ length: gen.promptLen }, () => rng.int(8, cfg.vocabSize)),
    );
    const t0 = performance.now();
    await generate(m, tok, prompts, { maxNewTokens: gen.newTokens, stopTokens: [], seed: i });
    if (i >= r.warmup) times.push(performance.now() - t0);
  }
  m.dispose();
  return (gen.batch * gen.newTokens) / (median(times) / 1000);
}
