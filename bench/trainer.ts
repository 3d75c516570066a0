// `npm run bench -- trainer`: trainer step time and tokens/s for grpo and mix on the two benchmark
// shapes, with the share of forward, backward and optimiser, and the memory a 3M-parameter step needs.
import { initEngine, tf, tidy } from '../backend/model/engine.js';
import { countParams, presetConfig } from '../backend/model/config.js';
import { Transformer } from '../backend/model/transformer.js';
import { tokenLogprobs } from '../backend/model/logprobs.js';
import { Trainer } from '../backend/trainer/trainer.js';
import { buildBatch, disposeBatch } from '../backend/trainer/batch.js';
import { makeObjective } from '../backend/trainer/resolve-algorithm.js';
import { Rng } from '../backend/core/rng.js';
import type { Experience } from '../backend/core/types.js';
import { median, report } from './report.js';

const VOCAB = 512;
const REPS = Number(process.env.BENCH_REPS ?? 5);
/** The stated budget for training the 3M-parameter model at batch 16 x 128 (peak tensor-engine memory). */
const MEMORY_BUDGET_MIB = 2048;
const SHAPES = [
  { name: '0.4m', preset: 'tiny-0.4m', batch: 16, seq: 64 },
  { name: '3m', preset: 'small-3m', batch: 16, seq: 128 },
];

/** B experiences of `seq` tokens: a quarter prompt, the rest response; half expert rows for mix. */
function experiences(B: number, seq: number, expertRows: number, rng: Rng): Experience[] {
  const P = seq / 4;
  return Array.from({ length: B }, (_, b): Experience => {
    const resp = Array.from({ length: seq - P }, () => rng.int(8, VOCAB));
    return {
      id: `e${b}`,
      taskId: `t${b >> 2}`,
      groupId: `g${b >> 2}`,
      runId: 'bench',
      source: b < expertRows ? 'expert' : 'usual',
      promptTokens: Array.from({ length: P }, () => rng.int(8, VOCAB)),
      promptText: '',
      responseTokens: resp,
      responseText: '',
      actionMask: resp.map(() => 1),
      logprobs: resp.map(() => -Math.log(VOCAB) + rng.normal() * 0.1),
      modelVersion: 0,
      reward: rng.next(),
      advantages: resp.map(() => rng.normal()),
      status: 'ok',
      useCount: 0,
      createdAt: 0,
    };
  });
}

await initEngine();
for (const s of SHAPES) {
  const cfg = presetConfig(s.preset, VOCAB);
  for (const algo of ['grpo', 'mix']) {
    const rng = new Rng(1);
    const model = new Transformer(cfg, 1);
    const objective = makeObjective(algo, {});
    const reference = objective.needsReference ? model.clone() : undefined;
    const trainer = new Trainer(model, objective, { lr: 1e-4, padId: 0 }, reference);
    const exps = experiences(s.batch, s.seq, algo === 'mix' ? s.batch / 2 : 0, rng);
    const totals: number[] = [];
    const grads: number[] = [];
    const optims: number[] = [];
    const forwards: number[] = [];
    let peakBytes = 0;
    for (let i = 0; i < 2 + REPS; i++) {
      const before = tf.memory().numBytes;
      const m = await trainer.trainStep(exps, 0);
      peakBytes = Math.max(peakBytes, tf.memory().numBytes - before);
      // Forward alone (same loss graph, no tape) to split the gradient time into forward / backward.
      const batch = buildBatch(exps, 0);
      const f0 = performance.now();
      const lp = tidy(() => tokenLogprobs(model, batch.ids, { attentionMask: batch.attentionMask }).logprobs);
      await lp.data();
      const fwd = (performance.now() - f0) / 1000;
      lp.dispose();
      disposeBatch(batch);
      if (i >= 2) {
        totals.push(m.time_total_s);
        grads.push(m.time_grad_s);
        optims.push(m.time_optim_s);
        forwards.push(fwd);
      }
    }
    const total = median(totals);
    const fwd = median(forwards);
    const bwd = Math.max(0, median(grads) - fwd);
    const opt = median(optims);
    const tokens = s.batch * (s.seq - s.seq / 4);
    report({
      bench: 'trainer',
      figure: `${algo}_step_${s.name}`,
      unit: 's',
      value: total,
      baseline: null,
      baseline_value: null,
      ratio: null,
      params: countParams(cfg),
      batch: `${s.batch}x${s.seq}`,
    });
    report({
      bench: 'trainer',
      figure: `${algo}_tokens_per_s_${s.name}`,
      unit: 'tok/s',
      value: tokens / total,
      baseline: null,
      baseline_value: null,
      ratio: null,
      note: 'trained (response) tokens',
    });
    report({
      bench: 'trainer',
      figure: `${algo}_share_${s.name}`,
      unit: 'fraction',
      value: fwd / total,
      forward: fwd / total,
      backward: bwd / total,
      optimizer: opt / total,
      other: Math.max(0, 1 - (fwd + bwd + opt) / total),
    });
    if (s.name === '3m') {
      // The wasm heap only grows, so its size is the peak the step needed (tensors + scratch).
      const heap = (tf.backend() as unknown as { wasm?: { HEAPU8?: Uint8Array } }).wasm?.HEAPU8?.length;
      report({
        bench: 'trainer',
        figure: `${algo}_memory_${s.name}`,
        unit: 'MiB',
        value: (heap ?? process.memoryUsage().rss) / 2 ** 20,
        measure: heap ? 'peak wasm heap' : 'process rss',
        budget_mib: MEMORY_BUDGET_MIB,
        held_tensors_mib: tf.memory().numBytes / 2 ** 20,
        rss_mib: process.memoryUsage().rss / 2 ** 20,
        leaked_per_step_mib: peakBytes / 2 ** 20,
      });
    }
    trainer.dispose();
    model.dispose();
    reference?.dispose();
  }
}
