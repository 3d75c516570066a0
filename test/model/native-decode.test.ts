// The native decode step (native/rft_blas.c Decode) on the paths the multi-sequence test in
// native-blas.test.ts does not take: one or two sequences (per-row sgemv, tied and untied head) and
// more than one BLAS thread, fixed or chosen by probing ('auto'), each against the tfjs decode; and
// the native prefill (the prompt's positions through the same C code, in chunks when long); and a
// model with q/k/v biases (Qwen2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { engineInfo, initEngine, tf } from '../../backend/model/engine.js';
import { presetConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { generate } from '../../backend/model/generate.js';
import {
  decodeThreadsFromEnv,
  NativeDecoder,
  nativeDecodeAvailable,
  type DecodeThreads,
} from '../../backend/model/native-decode.js';
import { ByteTestTokenizer } from '../helpers/byte-tokenizer.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';

await initEngine();
const info = engineInfo()!;
const skip =
  info.matmul?.kernel === 'native-blas'
    ? false
    : `native BLAS not active: ${info.matmul?.detail ?? `backend ${info.backend}`}`;

async function decodeBoth(m: Transformer, tok: ByteTestTokenizer, prompts: number[][], threads: DecodeThreads) {
  const runs = [];
  for (const flag of ['1', '0']) {
    process.env.RFT_NATIVE_DECODE = flag;
    try {
      runs.push(
        await generate(m, tok, prompts, {
          maxNewTokens: 20,
          temperature: 0.9,
          seed: 3,
          stopTokens: [],
          decodeThreads: threads,
        }),
      );
    } finally {
      delete process.env.RFT_NATIVE_DECODE;
    }
  }
  return runs as [Awaited<ReturnType<typeof generate>>, Awaited<ReturnType<typeof generate>>];
}

test(
  'one and two sequences decode natively (sgemv rows) as the tfjs decode does, at 1, 2 and auto threads',
  { skip },
  async () => {
    const tok = new ByteTestTokenizer();
    for (const over of [
      { nKvHeads: 2, tieEmbeddings: true },
      { nKvHeads: 4, tieEmbeddings: false },
    ]) {
      const cfg = presetConfig('tiny-0.4m', tok.vocabSize, {
        dModel: 32,
        nLayers: 2,
        nHeads: 4,
        dFF: 64,
        maxSeqLen: 48,
        initStd: 0.3,
        ...over,
      });
      const m = new Transformer(cfg, 21);
      for (const prompts of [
        [[tok.bosId, ...tok.encode('one prompt')]],
        ['a', 'two rows'].map((p) => [tok.bosId, ...tok.encode(p)]),
      ]) {
        for (const threads of [1, 2, 'auto'] as const) {
          const [nat, ref] = await decodeBoth(m, tok, prompts, threads);
          for (let i = 0; i < prompts.length; i++) {
            const what = `${prompts.length} rows, threads ${threads}, ${JSON.stringify(over)}, row ${i}`;
            assert.deepEqual(nat[i]!.tokens, ref[i]!.tokens, what);
            assertF32Close(
              nat[i]!.logprobs,
              ref[i]!.logprobs,
              ULPS.twoPasses,
              `${what}: native vs tfjs decode`,
              tok.vocabSize,
            );
          }
        }
      }
      m.dispose();
    }
  },
);

test(
  'a model with q/k/v biases (Qwen2 layout) decodes and prefills natively as the tfjs decode does (issue 41 item 3: it sampled through tfjs kernels, 5x slower)',
  { skip },
  async () => {
    const tok = new ByteTestTokenizer();
    const cfg = presetConfig('tiny-0.4m', tok.vocabSize, {
      dModel: 32,
      nLayers: 2,
      nHeads: 4,
      nKvHeads: 2,
      dFF: 64,
      maxSeqLen: 48,
      initStd: 0.3,
      tieEmbeddings: false,
      attnBias: true,
    });
    const m = new Transformer(cfg, 23);
    // Biases far from zero, so a step that dropped one would change the tokens and log-probs.
    for (let l = 0; l < cfg.nLayers; l++)
      for (const w of ['q', 'k', 'v']) {
        const b = m.p(`model.layers.${l}.self_attn.${w}_proj.bias`);
        b.assign(tf.tidy(() => tf.mul(tf.sin(tf.range(0, b.shape[0]!, 1)), 0.8)));
      }
    assert.equal(nativeDecodeAvailable(m), true, 'the native decode takes a model with q/k/v biases');
    const prompts = ['a', 'two rows', 'and a third'].map((p) => [tok.bosId, ...tok.encode(p)]);
    const [nat, ref] = await decodeBoth(m, tok, prompts, 1);
    for (let i = 0; i < prompts.length; i++) {
      assert.deepEqual(nat[i]!.tokens, ref[i]!.tokens, `row ${i}`);
      assertF32Close(
        nat[i]!.logprobs,
        ref[i]!.logprobs,
        ULPS.twoPasses,
        `row ${i}: native vs tfjs decode`,
        tok.vocabSize,
      );
    }
    m.dispose();
  },
);

test(
  'the native prefill gives the tfjs forward logits of the last position, over several chunks and left padding',
  { skip },
  async () => {
    const cfg = presetConfig('tiny-0.4m', 61, {
      dModel: 32,
      nLayers: 2,
      nHeads: 4,
      nKvHeads: 2,
      dFF: 64,
      maxSeqLen: 96,
      initStd: 0.3,
    });
    const m = new Transformer(cfg, 5);
    // 8 rows of up to 70 tokens: 256 / 8 = 32 positions a call, so three prefill calls; rows padded on the left.
    const B = 8;
    const T = 70;
    const ids = new Int32Array(B * T);
    const mask = new Float32Array(B * T);
    for (let b = 0; b < B; b++) {
      const len = T - b * 7;
      for (let t = T - len; t < T; t++) {
        ids[b * T + t] = (b * 13 + t * 7) % 61;
        mask[b * T + t] = 1;
      }
    }
    const dec = new NativeDecoder(m, { ids, mask, B, T }, 4, 1);
    assert.throws(() => dec.step(new Int32Array(B)), /prefill\(\) the prompt before the first step/);
    const nat = Float32Array.from(dec.prefill());
    assert.throws(() => dec.prefill(), /prefill\(\) needs a decoder made from a prompt batch, once/);
    const ref = tf.tidy(() => {
      const f = m.forward(tf.tensor2d(ids, [B, T], 'int32'), { attentionMask: tf.tensor2d(mask, [B, T]) });
      return tf.slice(f.logits, [0, T - 1, 0], [B, 1, -1]).dataSync() as Float32Array;
    });
    assert.equal(nat.length, ref.length);
    assertF32Close(nat, ref, ULPS.forward, 'prefill logits');
    // The caches it filled continue as the tfjs decode does: one more token per row.
    const next = Int32Array.from({ length: B }, (_, b) => (b * 5 + 3) % 61);
    const stepped = Float32Array.from(dec.step(next));
    const ref2 = tf.tidy(() => {
      const all = tf.concat([tf.tensor2d(ids, [B, T], 'int32'), tf.tensor2d(next, [B, 1], 'int32')], 1) as tf.Tensor2D;
      const f = m.forward(all, {
        attentionMask: tf.concat([tf.tensor2d(mask, [B, T]), tf.ones([B, 1])], 1) as tf.Tensor2D,
      });
      return tf.slice(f.logits, [0, T, 0], [B, 1, -1]).dataSync() as Float32Array;
    });
    assertF32Close(stepped, ref2, ULPS.twoPasses, 'logits after a step');
    assert.throws(
      () => new NativeDecoder(m, { ids, mask: mask.subarray(1), B, T }, 4),
      /prompt ids and mask must both hold B \* T = 8 \* 70 entries/,
    );
    m.dispose();
  },
);

test("'auto' threads probe 1 and 2 and settle on one of them; bad thread counts are refused", { skip }, () => {
  const cfg = presetConfig('tiny-0.4m', 40, { dModel: 16, nLayers: 1, nHeads: 2, nKvHeads: 2, dFF: 32, maxSeqLen: 32 });
  const m = new Transformer(cfg, 1);
  const f = m.forward(tf.tensor2d([[1, 2, 3]], [1, 3], 'int32'), { returnCache: true });
  const dec = new NativeDecoder(m, f.cache!, 12, 'auto');
  for (let i = 0; i < 6; i++) dec.step(Int32Array.from([5]));
  assert.ok([1, 2].includes(dec.currentThreads), `chose ${dec.currentThreads}`);
  assert.throws(() => new NativeDecoder(m, f.cache!, 4, 0), /threads must be a positive integer or 'auto'/);
  tf.dispose([f.logits, f.cache!.keyMask, ...f.cache!.layers.flatMap((l) => [l.k, l.v])]);
  m.dispose();
});

test('RFT_DECODE_THREADS: unset is 1, a count or auto is taken, anything else is refused by name', () => {
  const saved = process.env.RFT_DECODE_THREADS;
  try {
    delete process.env.RFT_DECODE_THREADS;
    assert.equal(decodeThreadsFromEnv(), 1);
    process.env.RFT_DECODE_THREADS = '2';
    assert.equal(decodeThreadsFromEnv(), 2);
    process.env.RFT_DECODE_THREADS = 'auto';
    assert.equal(decodeThreadsFromEnv(), 'auto');
    process.env.RFT_DECODE_THREADS = 'two';
    assert.throws(() => decodeThreadsFromEnv(), /RFT_DECODE_THREADS: expected a positive integer or 'auto', got 'two'/);
  } finally {
    if (saved === undefined) delete process.env.RFT_DECODE_THREADS;
    else process.env.RFT_DECODE_THREADS = saved;
  }
});
