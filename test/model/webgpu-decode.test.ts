// The fused GPU decode step (webgpu-decode.ts, wgsl/decode.ts) against the model's own forward pass
// on the cpu engine (no cache: every position recomputed), for the Llama shapes the decoder branches
// on (GQA, tied and untied heads, Qwen2's biases, Qwen3's q/k norms, LoRA adapters), with left-padded
// rows; the GPU sampler against sampleToken at a real vocabulary size; generate() with the decoder
// against generate() with tfjs's kernels (RFT_GPU_DECODE=0); and the dispatches of one step. On
// SwiftShader without a GPU; skipped, with the reason, where Dawn finds no adapter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tf, tidy } from '../../backend/model/engine.js';
import { makeConfig, type ModelConfigInput } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { makeLoraConfig } from '../../backend/model/lora.js';
import { generate } from '../../backend/model/generate.js';
import { sampleToken } from '../../backend/model/sampling.js';
import { GpuDecoder, GPU_DECODE_ENV, sampleOnGpu } from '../../backend/model/webgpu-decode.js';
import { decodeKernels } from '../../backend/model/wgsl/decode.js';
import { compileWgslKernels, wgslDispatchCounts } from '../../backend/model/wgsl/runner.js';
import { Rng } from '../../backend/core/rng.js';
import { ByteTestTokenizer } from '../helpers/byte-tokenizer.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';
import { on, startWebgpu } from '../helpers/on-backend.js';

delete process.env[GPU_DECODE_ENV];
const { skip } = await startWebgpu();

const BASE: ModelConfigInput = {
  vocabSize: 300,
  dModel: 48,
  nLayers: 2,
  nHeads: 4,
  nKvHeads: 2,
  dFF: 80,
  maxSeqLen: 64,
  initStd: 0.3,
};

/** Left-padded prompts of different lengths, then `steps` forced tokens per row. */
const PROMPTS = [
  [1, 17, 33, 250, 9],
  [1, 4],
  [1, 99, 7, 7, 7, 120, 45, 3],
];
const FORCED = [
  [5, 6, 7, 8, 9],
  [200, 201, 202, 203, 204],
  [11, 12, 13, 14, 15],
];

/** Logits of every forced step: with the GPU decoder (webgpu), or the full forward pass with a mask (cpu). */
async function stepLogits(m: Transformer, useDecoder: boolean): Promise<Float32Array[]> {
  const B = PROMPTS.length;
  const T = Math.max(...PROMPTS.map((p) => p.length));
  const S = FORCED[0]!.length;
  const ids = new Int32Array(B * (T + S));
  const mask = new Float32Array(B * (T + S));
  PROMPTS.forEach((p, b) => {
    p.forEach((t, i) => {
      ids[b * (T + S) + T - p.length + i] = t;
      mask[b * (T + S) + T - p.length + i] = 1;
    });
    FORCED[b]!.forEach((t, s) => {
      ids[b * (T + S) + T + s] = t;
      mask[b * (T + S) + T + s] = 1;
    });
  });
  const out: Float32Array[] = [];
  if (!useDecoder) {
    // Logits at the position of each forced token (the prediction the step after it makes).
    const f = tidy(() =>
      m.forward(tf.tensor2d(ids, [B, T + S], 'int32'), { attentionMask: tf.tensor2d(mask, [B, T + S]) }),
    );
    const all = (await f.logits.data()) as Float32Array;
    const V = m.config.vocabSize;
    for (let s = 0; s < S; s++) {
      const step = new Float32Array(B * V);
      for (let b = 0; b < B; b++)
        step.set(all.subarray((b * (T + S) + T + s) * V, (b * (T + S) + T + s + 1) * V), b * V);
      out.push(step);
    }
    f.logits.dispose();
    return out;
  }
  const promptIds = new Int32Array(B * T);
  const promptMask = new Float32Array(B * T);
  for (let b = 0; b < B; b++)
    for (let t = 0; t < T; t++) {
      promptIds[b * T + t] = ids[b * (T + S) + t]!;
      promptMask[b * T + t] = mask[b * (T + S) + t]!;
    }
  const { cache } = tidy(() =>
    m.forward(tf.tensor2d(promptIds, [B, T], 'int32'), {
      attentionMask: tf.tensor2d(promptMask, [B, T]),
      returnCache: true,
    }),
  );
  const dec = new GpuDecoder(m, cache!, S);
  for (const l of cache!.layers) tf.dispose([l.k, l.v]);
  cache!.keyMask.dispose();
  try {
    for (let s = 0; s < S; s++) {
      dec.step(Int32Array.from(FORCED.map((f) => f[s]!)));
      out.push(await dec.readLogits());
    }
  } finally {
    dec.dispose();
  }
  return out;
}

/** stepLogits of a model built on `backend`: the GPU decoder on webgpu, the full forward pass on cpu. */
async function logitsOn(backend: 'webgpu' | 'cpu', build: () => Transformer): Promise<Float32Array[]> {
  return on(backend, async () => {
    const m = build();
    try {
      return await stepLogits(m, backend === 'webgpu');
    } finally {
      m.dispose();
    }
  });
}

const VARIANTS: [string, Partial<ModelConfigInput>, boolean][] = [
  ['GQA, untied head', {}, false],
  ['tied head', { tieEmbeddings: true }, false],
  ['Qwen2 biases', { attnBias: true }, false],
  ['Qwen3 q/k norms, head size 32', { qkNorm: true, headDim: 32 }, false],
  ['head size 128 (2 dims a thread), MHA', { nHeads: 2, nKvHeads: 2, headDim: 128 }, false],
  ['LoRA adapters', {}, true],
];

for (const [name, over, lora] of VARIANTS) {
  test(`GPU decode step = the cpu forward pass: ${name}`, { skip }, async () => {
    const cfg = makeConfig({ ...BASE, ...over });
    const build = () => {
      const m = new Transformer(cfg, 7);
      // Norm weights start at one and biases at zero: drawn instead, so a kernel that skipped one would fail.
      const rng = new Rng(21);
      for (const [n, v] of m.params)
        if (/norm|bias/.test(n))
          v.assign(
            tf.tensor(
              Float32Array.from({ length: v.size }, () => 1 + rng.normal() * 0.3),
              v.shape,
            ),
          );
      if (lora) {
        m.addLora(makeLoraConfig({ rank: 4, alpha: 8 }), 3);
        // B starts at zero: move it, so a decoder that ignored the adapters would fail.
        for (const [n, v] of m.adapters)
          if (n.includes('lora_B')) v.assign(tf.randomNormal(v.shape, 0, 0.2, 'float32', 5));
      }
      return m;
    };
    const want = await logitsOn('cpu', build);
    const got = await logitsOn('webgpu', build);
    for (let s = 0; s < want.length; s++)
      assertF32Close(got[s]!, want[s]!, ULPS.twoPasses, `${name}: step ${s} logits`);
    if (lora) {
      // Positive control: the adapters move the logits by far more than the bound.
      const plain = await logitsOn('cpu', () => new Transformer(cfg, 7));
      let d = 0;
      for (let i = 0; i < plain[0]!.length; i++) d = Math.max(d, Math.abs(plain[0]![i]! - want[0]![i]!));
      assert.ok(d > 1e-2, `the adapters change the logits (${d})`);
    }
  });
}

test('a decode step is 5 dispatches a layer + 3, and every decode kernel compiles', { skip }, async () => {
  const errors = await compileWgslKernels(decodeKernels([16, 32, 128]));
  assert.deepEqual(errors, []);
  await on('webgpu', async () => {
    const cfg = makeConfig({ ...BASE, nLayers: 3 });
    const m = new Transformer(cfg, 1);
    const { cache } = tidy(() => m.forward(tf.tensor2d([[1, 2, 3]], [1, 3], 'int32'), { returnCache: true }));
    const dec = new GpuDecoder(m, cache!, 4);
    await assert.rejects(dec.sample(new Float32Array(1), 1), /GpuDecoder.sample: no step has run yet/);
    assert.throws(() => dec.step(Int32Array.from([4, 5])), /2 tokens for a batch of 1/);
    wgslDispatchCounts(true);
    dec.step(Int32Array.from([4]));
    await dec.readLogits();
    const counts = wgslDispatchCounts(true);
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    assert.equal(total, 5 * cfg.nLayers + 3, JSON.stringify([...counts]));
    assert.equal(dec.dispatches, total);
    dec.dispose();
    for (const l of cache!.layers) tf.dispose([l.k, l.v]);
    cache!.keyMask.dispose();
    m.dispose();
  });
});

test(
  "the decoder's own sampler = sampleOnGpu on its logits, as the temperature changes between calls",
  { skip },
  async () => {
    await on('webgpu', async () => {
      const m = new Transformer(makeConfig(BASE), 2);
      const B = 3;
      const { cache } = tidy(() => m.forward(tf.tensor2d([1, 2, 3, 4, 5, 6], [B, 2], 'int32'), { returnCache: true }));
      const dec = new GpuDecoder(m, cache!, 2);
      try {
        dec.step(Int32Array.from([7, 8, 9]));
        const logits = await dec.readLogits();
        const rng = new Rng(5);
        // The same temperature twice keeps the sampler's uniforms; each change rewrites them.
        for (const temperature of [1, 0, 0.5, 0.5, 1]) {
          const draws = Float32Array.from({ length: B }, () => rng.next());
          const got = await dec.sample(draws, temperature);
          const t = tf.tensor2d(logits, [B, logits.length / B]);
          const want = await sampleOnGpu(t, draws, temperature);
          t.dispose();
          assert.deepEqual(got, want, `temperature ${temperature}`);
        }
      } finally {
        dec.dispose();
        for (const l of cache!.layers) tf.dispose([l.k, l.v]);
        cache!.keyMask.dispose();
        m.dispose();
      }
    });
  },
);

test(
  "the GPU sampler = sampleToken at Qwen's 151,936-token vocabulary (greedy and temperature)",
  { skip },
  async () => {
    const V = 151_936;
    const B = 3;
    const rng = new Rng(11);
    const logits = new Float32Array(B * V);
    // Peaked rows (a few likely tokens over a flat tail), as a trained model's are.
    for (let b = 0; b < B; b++)
      for (let i = 0; i < V; i++) logits[b * V + i] = rng.normal() * 2 + (i % 9973 === b ? 12 : 0);
    for (const temperature of [0, 0.7, 1]) {
      const draws = Float32Array.from({ length: B }, () => rng.next());
      const got = await on('webgpu', async () => {
        const t = tf.tensor2d(logits, [B, V]);
        try {
          return await sampleOnGpu(t, draws, temperature);
        } finally {
          t.dispose();
        }
      });
      for (let b = 0; b < B; b++) {
        // sampleToken with an Rng whose one draw is this row's.
        const fixed = { next: () => draws[b]! } as unknown as Rng;
        const want = sampleToken(logits.subarray(b * V, (b + 1) * V), { temperature, topK: 0, topP: 1 }, fixed);
        assert.equal(got[b]!.token, want.token, `T=${temperature} row ${b}: token`);
        assert.ok(
          Math.abs(got[b]!.logprob - want.logprob) < 1e-4 * Math.max(1, Math.abs(want.logprob)),
          `T=${temperature} row ${b}: logprob ${got[b]!.logprob} vs ${want.logprob}`,
        );
      }
    }
  },
);

test(
  'generate() with the GPU decoder = with tfjs kernels: greedy tokens, sampled tokens, log-probs, top-k',
  { skip },
  async () => {
    const tok = new ByteTestTokenizer();
    const cfg = makeConfig({ ...BASE, vocabSize: tok.vocabSize, maxSeqLen: 48 });
    const prompts = [
      [tok.bosId, ...tok.encode('abc')],
      [tok.bosId, ...tok.encode('a longer prompt')],
    ];
    await on('webgpu', async () => {
      const m = new Transformer(cfg, 4);
      try {
        for (const opts of [
          { maxNewTokens: 10, seed: 1, temperature: 0, stopTokens: [] },
          { maxNewTokens: 10, seed: 2, temperature: 1, stopTokens: [] },
          { maxNewTokens: 10, seed: 3, temperature: 0.8, topK: 5, stopTokens: [] },
        ]) {
          process.env[GPU_DECODE_ENV] = '0';
          const plain = await generate(m, tok, prompts, opts);
          delete process.env[GPU_DECODE_ENV];
          wgslDispatchCounts(true);
          const fused = await generate(m, tok, prompts, opts);
          const counts = wgslDispatchCounts(true);
          assert.ok((counts.get('decode_embed') ?? 0) >= 9, `the fused step ran: ${JSON.stringify([...counts])}`);
          if (!opts.topK) assert.ok((counts.get('decode_sample') ?? 0) >= 10, 'sampled on the GPU');
          else assert.equal(counts.get('decode_sample') ?? 0, 0, 'top-k samples on the CPU');
          assert.deepEqual(
            fused.map((g) => g.tokens),
            plain.map((g) => g.tokens),
            `tokens at ${JSON.stringify(opts)}`,
          );
          for (let i = 0; i < prompts.length; i++)
            assertF32Close(fused[i]!.logprobs, plain[i]!.logprobs, ULPS.twoPasses, `row ${i} logprobs`, tok.vocabSize);
        }
      } finally {
        delete process.env[GPU_DECODE_ENV];
        m.dispose();
      }
    });
  },
);
