// The chunked head (backend/model/logprobs.ts headLogprobs): log-probs, entropies and every gradient
// equal the unchunked path's (the whole [N, V] logits at once) for a trainable tied and untied head,
// a frozen head under LoRA, a head outside the wasm heap, with temperature, padding and entropy, on the
// native ops and on plain tfjs kernels; and a training step never holds [N, V] logits.
//
// Tolerance: both paths compute each logit with the same f32 dot product over D, but the chunk's
// matmul has fewer rows (BLAS may block the sum differently) and the head-weight gradient sums the
// chunks' partial products in a different order. f32 has a 6e-8 unit roundoff; sums over V (512)
// and N (36) terms of that order leave relative differences around 1e-6..1e-5, so 1e-4 of each
// tensor's largest magnitude fails on any real error (a wrong softmax term or a missed chunk moves
// values by O(1) of that scale) while leaving room for reordered sums.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tf, initEngine } from '../../backend/model/engine.js';
import { headChunkRows, tokenLogprobs, type TokenLogprobOptions } from '../../backend/model/logprobs.js';
import { makeLoraConfig } from '../../backend/model/lora.js';
import { Transformer } from '../../backend/model/transformer.js';
import { makeConfig, type ModelConfigInput } from '../../backend/model/config.js';
import { externalWeightsAvailable } from '../../backend/model/external-weights.js';
import { nativeOpsAvailable } from '../../backend/model/native-ops.js';
import { Rng } from '../../backend/core/rng.js';

await initEngine();
const RTOL = 1e-4;

const base: ModelConfigInput = {
  vocabSize: 512,
  dModel: 32,
  nLayers: 2,
  nHeads: 4,
  nKvHeads: 2,
  dFF: 48,
  maxSeqLen: 32,
};

function batch(seed: number): { ids: tf.Tensor2D; attn: tf.Tensor2D; wLp: tf.Tensor2D; wEnt: tf.Tensor2D } {
  const rng = new Rng(seed);
  const [B, T] = [3, 13];
  const ids = tf.tensor2d(
    Int32Array.from({ length: B * T }, () => rng.int(0, 512)),
    [B, T],
    'int32',
  );
  // Row 0 left-padded by 3 positions.
  const attn = tf.tensor2d(
    Float32Array.from({ length: B * T }, (_, i) => (i < 3 ? 0 : 1)),
    [B, T],
  );
  // Distinct weights per position so every position's gradient is checked, not only their sum.
  const wLp = tf.tensor2d(
    Float32Array.from({ length: B * (T - 1) }, () => rng.next() * 2 - 1),
    [B, T - 1],
  );
  const wEnt = tf.tensor2d(
    Float32Array.from({ length: B * (T - 1) }, () => rng.next() * 2 - 1),
    [B, T - 1],
  );
  return { ids, attn, wLp, wEnt };
}

/** Values (log-probs, entropies) and the gradient of a weighted sum of them for every trainable variable. */
function run(model: Transformer, b: ReturnType<typeof batch>, opts: TokenLogprobOptions): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  const vars = model.variables();
  const { value, grads } = tf.variableGrads(() => {
    const r = tokenLogprobs(model, b.ids, { attentionMask: b.attn, ...opts });
    out.set('logprobs', r.logprobs.dataSync() as Float32Array);
    let loss = tf.sum(tf.mul(r.logprobs, b.wLp));
    if (r.entropy) {
      out.set('entropy', r.entropy.dataSync() as Float32Array);
      loss = tf.add(loss, tf.sum(tf.mul(r.entropy, b.wEnt)));
    }
    return loss as tf.Scalar;
  }, vars);
  out.set('loss', value.dataSync() as Float32Array);
  for (const [n, g] of Object.entries(grads)) out.set(`grad ${model.paramName(n)}`, g.dataSync() as Float32Array);
  tf.dispose([value, ...Object.values(grads)]);
  return out;
}

function assertParity(chunked: Map<string, Float32Array>, full: Map<string, Float32Array>, label: string): void {
  assert.deepEqual([...chunked.keys()].sort(), [...full.keys()].sort(), `${label}: same outputs and gradients`);
  assert.ok(
    [...full.keys()].some((k) => k.startsWith('grad ')),
    `${label}: gradients were computed`,
  );
  for (const [k, a] of full) {
    const c = chunked.get(k)!;
    let scale = 0;
    let diff = 0;
    for (let i = 0; i < a.length; i++) {
      scale = Math.max(scale, Math.abs(a[i]!));
      diff = Math.max(diff, Math.abs(a[i]! - c[i]!));
    }
    assert.ok(scale > 0 || k.includes('lora_B'), `${label} ${k}: non-zero reference`);
    assert.ok(diff <= RTOL * Math.max(scale, 1e-6), `${label} ${k}: max diff ${diff} > ${RTOL} x ${scale}`);
  }
}

/** A chunk of 5 rows: 36 positions are 8 chunks, the last one short. */
const CHUNK = 5;

async function compare(label: string, make: () => Transformer, opts: TokenLogprobOptions): Promise<void> {
  const m = make();
  const b = batch(7);
  try {
    const full = run(m, b, { ...opts, chunkRows: 0 });
    const chunked = run(m, b, { ...opts, chunkRows: CHUNK });
    assertParity(chunked, full, label);
    // One chunk holding every position is the same op too.
    assertParity(run(m, b, { ...opts, chunkRows: 1000 }), full, `${label} (one chunk)`);
  } finally {
    tf.dispose(Object.values(b));
    m.dispose();
  }
}

/** LoRA adapters with a non-zero B, so the adapted model differs from its base. */
function withLora(m: Transformer): Transformer {
  m.addLora(makeLoraConfig({ rank: 4, alpha: 8 }), 5);
  for (const [name, v] of m.adapters)
    if (name.includes('lora_B')) v.assign(tf.randomNormal(v.shape, 0, 0.05, 'float32', 3));
  return m;
}

for (const ops of ['native', 'tfjs'] as const) {
  const skip = ops === 'native' && !nativeOpsAvailable() ? 'the native addon is not built' : false;
  const env = (f: () => Promise<void>) => async () => {
    const prev = process.env.RFT_NATIVE_OPS;
    if (ops === 'tfjs') process.env.RFT_NATIVE_OPS = '0';
    try {
      await f();
    } finally {
      if (prev === undefined) delete process.env.RFT_NATIVE_OPS;
      else process.env.RFT_NATIVE_OPS = prev;
    }
  };
  test(
    `${ops}: full fine-tuning, tied head, temperature 0.7, with entropy`,
    { skip },
    env(() =>
      compare('tied', () => new Transformer(makeConfig(base), 1), { temperature: 0.7, withEntropy: true, train: true }),
    ),
  );
  // Without entropy the native path runs in place (one reused logits buffer); with it, chunk by chunk in tfjs.
  test(
    `${ops}: full fine-tuning, tied head, temperature 0.7, log-probs only`,
    { skip },
    env(() => compare('tied lp', () => new Transformer(makeConfig(base), 1), { temperature: 0.7, train: true })),
  );
  test(
    `${ops}: full fine-tuning, untied head, log-probs only`,
    { skip },
    env(() => compare('untied', () => new Transformer(makeConfig({ ...base, tieEmbeddings: false }), 2), {})),
  );
  test(
    `${ops}: full fine-tuning, untied head, temperature 1.3, with entropy`,
    { skip },
    env(() =>
      compare('untied entropy', () => new Transformer(makeConfig({ ...base, tieEmbeddings: false }), 2), {
        temperature: 1.3,
        withEntropy: true,
      }),
    ),
  );
  test(
    `${ops}: LoRA (frozen tied head in the heap), with entropy`,
    { skip },
    env(() =>
      compare('lora tied', () => withLora(new Transformer(makeConfig(base), 3)), {
        withEntropy: true,
        temperature: 0.9,
      }),
    ),
  );
  test(
    `${ops}: LoRA (frozen untied head in the heap), log-probs only`,
    { skip },
    env(() =>
      compare('lora untied', () => withLora(new Transformer(makeConfig({ ...base, tieEmbeddings: false }), 4)), {}),
    ),
  );
}

const extSkip = externalWeightsAvailable() ? false : 'weights outside the heap need the native addon with sgemmExt';
test(
  'LoRA with the head outside the wasm heap (tied table and untied lm_head), with and without entropy',
  { skip: extSkip },
  async () => {
    await compare('external tied', () => withLora(new Transformer(makeConfig(base), 5, { external: true })), {
      withEntropy: true,
      temperature: 0.8,
    });
    await compare(
      'external untied',
      () => withLora(new Transformer(makeConfig({ ...base, tieEmbeddings: false }), 6, { external: true })),
      {},
    );
    await compare(
      'external tied, log-probs only',
      () => withLora(new Transformer(makeConfig(base), 5, { external: true })),
      { temperature: 1.4 },
    );
    await compare(
      'external untied, entropy',
      () => withLora(new Transformer(makeConfig({ ...base, tieEmbeddings: false }), 6, { external: true })),
      { withEntropy: true },
    );
    // The external head gives what the same weights in the heap give (the chunked path on both).
    const a = withLora(new Transformer(makeConfig(base), 5, { external: true }));
    const h = withLora(new Transformer(makeConfig(base), 5));
    const b = batch(8);
    try {
      assertParity(
        run(a, b, { chunkRows: CHUNK, withEntropy: true }),
        run(h, b, { chunkRows: CHUNK, withEntropy: true }),
        'external vs heap',
      );
      assertParity(
        run(a, b, { chunkRows: CHUNK, temperature: 0.6 }),
        run(h, b, { chunkRows: CHUNK, temperature: 0.6 }),
        'external vs heap, in place',
      );
    } finally {
      tf.dispose(Object.values(b));
      a.dispose();
      h.dispose();
    }
  },
);

test("chunk size from the vocabulary: a 512 vocabulary is one chunk per batch, Qwen's is tens of rows", () => {
  assert.equal(headChunkRows(512), 16384);
  assert.equal(headChunkRows(151669), 55);
  const prev = process.env.RFT_HEAD_CHUNK_MIB;
  process.env.RFT_HEAD_CHUNK_MIB = '0';
  try {
    assert.equal(headChunkRows(151669), 0);
  } finally {
    if (prev === undefined) delete process.env.RFT_HEAD_CHUNK_MIB;
    else process.env.RFT_HEAD_CHUNK_MIB = prev;
  }
});

test(
  'a chunked training step never allocates the [N, V] logits: its peak is far below the unchunked one',
  { skip: nativeOpsAvailable() ? false : 'peak bytes are compared on the native path' },
  () => {
    // Vocabulary 8,192, 4 x 64 positions: the logits are 252 x 8192 x 4 = 8.3 MB, the model a fraction of that.
    const m = new Transformer(makeConfig({ ...base, vocabSize: 8192, maxSeqLen: 64 }), 9);
    const rng = new Rng(3);
    const ids = tf.tensor2d(
      Int32Array.from({ length: 4 * 64 }, () => rng.int(0, 8192)),
      [4, 64],
      'int32',
    );
    const peak = (chunkRows: number) => {
      const before = tf.memory().numBytes;
      const r = tf.profile(() => {
        const { value, grads } = tf.variableGrads(
          () => tf.neg(tf.sum(tokenLogprobs(m, ids, { chunkRows, withEntropy: true }).logprobs)) as tf.Scalar,
        );
        tf.dispose([value, ...Object.values(grads)]);
      });
      return r.then((p) => p.peakBytes - before);
    };
    return (async () => {
      const full = await peak(0);
      const chunked = await peak(16);
      const logits = 4 * 63 * 8192 * 4;
      assert.ok(full > 2 * logits, `unchunked peak ${full} holds several [N, V] arrays (${logits} bytes each)`);
      assert.ok(chunked < full - 2 * logits, `chunked peak ${chunked} vs unchunked ${full}`);
      ids.dispose();
      m.dispose();
    })();
  },
);
