import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine, tf } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { lmLoss, tokenLogprobs } from '../../backend/model/logprobs.js';
import { AdamW } from '../../backend/model/optim.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';

await initEngine();

const tiny = (over = {}) =>
  makeConfig({ vocabSize: 40, dModel: 32, nLayers: 2, nHeads: 4, nKvHeads: 2, dFF: 48, maxSeqLen: 64, ...over });

function ids2d(rows: number[][]): tf.Tensor2D {
  return tf.tensor2d(rows, [rows.length, rows[0]!.length], 'int32');
}

test('forward shapes: logits [B,T,V], hidden, value head, GQA and untied head', () => {
  const m = new Transformer(tiny({ valueHead: true, tieEmbeddings: false }), 1);
  tf.tidy(() => {
    const r = m.forward(
      ids2d([
        [1, 2, 3, 4, 5],
        [5, 4, 3, 2, 1],
      ]),
      { returnHidden: true },
    );
    assert.deepEqual(r.logits.shape, [2, 5, 40]);
    assert.deepEqual(r.hidden!.shape, [2, 5, 32]);
    assert.deepEqual(m.values(r.hidden!).shape, [2, 5]);
  });
  assert.ok(m.params.has('lm_head.weight'));
  assert.deepEqual(m.p('model.layers.0.self_attn.k_proj.weight').shape, [32, 16]); // 2 kv heads x hd 8
  m.dispose();
});

test('causality: changing a later token does not change earlier logits', async () => {
  const m = new Transformer(tiny(), 2);
  const a = tf.tidy(() => tf.slice(m.forward(ids2d([[1, 2, 3, 4, 5, 6]])).logits, [0, 0, 0], [1, 3, -1]));
  const b = tf.tidy(() => tf.slice(m.forward(ids2d([[1, 2, 3, 9, 9, 9]])).logits, [0, 0, 0], [1, 3, -1]));
  assertF32Close(
    (await a.data()) as Float32Array,
    (await b.data()) as Float32Array,
    ULPS.elementwise,
    'earlier logits',
  );
  tf.dispose([a, b]);
  m.dispose();
});

test('KV cache: incremental logits agree with one full pass to 1e-4, with left padding', async () => {
  const m = new Transformer(tiny(), 3);
  const seq = [1, 7, 3, 9, 12, 4, 30, 2, 8, 5];
  const full = tf.tidy(() => m.forward(ids2d([seq])).logits);
  const fullData = (await full.data()) as Float32Array;
  // Row 0: the sequence; row 1: a shorter prompt padded on the left (pads are masked out).
  const P = 4;
  const pad = 0;
  const prompt = [[...seq.slice(0, P)], [pad, pad, ...seq.slice(0, P - 2)]];
  const mask = tf.tensor2d([
    [1, 1, 1, 1],
    [0, 0, 1, 1],
  ]);
  let r = m.forward(ids2d(prompt), { attentionMask: mask, returnCache: true });
  const V = 40;
  const got: number[][] = [[], []];
  const push = async (logits: tf.Tensor3D) => {
    const T = logits.shape[1];
    const d = (await tf.slice(logits, [0, T - 1, 0], [2, 1, V]).data()) as Float32Array;
    got[0]!.push(...d.subarray(0, V));
    got[1]!.push(...d.subarray(V, 2 * V));
  };
  await push(r.logits);
  // Row 0 continues the sequence; row 1 continues its own shorter sequence.
  for (let t = P; t < seq.length; t++) {
    const next = ids2d([[seq[t]!], [seq[t - 2]!]]);
    r = m.forward(next, { cache: r.cache, returnCache: true });
    await push(r.logits);
  }
  const expect0 = Array.from(fullData.subarray((P - 1) * V, seq.length * V));
  assertF32Close(got[0]!, expect0, ULPS.twoPasses, 'row 0: cached vs full pass');
  // Row 1 holds seq shifted by two: compare with a full pass over that unpadded sequence.
  const short = seq.slice(0, seq.length - 2);
  const fullShort = (await tf.tidy(() => m.forward(ids2d([short])).logits).data()) as Float32Array;
  const expect1 = Array.from(fullShort.subarray((P - 3) * V, short.length * V));
  assertF32Close(got[1]!, expect1, ULPS.twoPasses, 'row 1 (left padded): cached vs full pass');
  m.dispose();
});

test('gradients are finite and match a finite-difference check', async () => {
  const m = new Transformer(tiny({ dModel: 16, nHeads: 2, nKvHeads: 1, dFF: 24, nLayers: 1, vocabSize: 12 }), 4);
  const ids = ids2d([
    [1, 5, 3, 7, 2],
    [4, 4, 9, 1, 0],
  ]);
  const mask = tf.ones([2, 4]) as tf.Tensor2D;
  const f = () => lmLoss(m, ids, mask);
  const { grads } = tf.variableGrads(f);
  for (const [name, g] of Object.entries(grads)) {
    const d = (await g.data()) as Float32Array;
    assert.ok(d.every(Number.isFinite), `non-finite gradient for ${name}`);
  }
  // Central differences on a few coordinates of several parameters (float32: use a loose step).
  const h = 1e-2;
  for (const name of [
    'model.embed_tokens.weight',
    'model.layers.0.self_attn.q_proj.weight',
    'model.layers.0.mlp.down_proj.weight',
    'model.layers.0.input_layernorm.weight',
    'model.norm.weight',
  ]) {
    const v = m.p(name);
    const base = (await v.data()) as Float32Array;
    const g = (await grads[v.name]!.data()) as Float32Array;
    for (const idx of [0, 3, Math.floor(base.length / 2)]) {
      const probe = async (delta: number) => {
        const copy = base.slice();
        copy[idx]! += delta;
        v.assign(tf.tensor(copy, v.shape));
        const l = f();
        const val = (await l.data())[0]!;
        l.dispose();
        return val;
      };
      const num = ((await probe(h)) - (await probe(-h))) / (2 * h);
      v.assign(tf.tensor(base, v.shape));
      const err = Math.abs(num - g[idx]!);
      assert.ok(err < 2e-3 + 0.05 * Math.abs(num), `${name}[${idx}]: analytic ${g[idx]} vs numeric ${num}`);
    }
  }
  tf.dispose(Object.values(grads));
  m.dispose();
});

test('a tiny model overfits a few sequences (loss < 0.05)', async () => {
  const m = new Transformer(tiny({ vocabSize: 16, dModel: 32, nLayers: 2, nHeads: 2, nKvHeads: 2, dFF: 64 }), 5);
  const data = [
    // Distinct first tokens: the continuation is fully determined, so the loss can approach 0.
    [1, 3, 5, 7, 9, 11, 13, 15, 2],
    [3, 4, 4, 8, 8, 12, 12, 3, 2],
    [5, 15, 14, 13, 12, 11, 10, 9, 2],
  ];
  const ids = ids2d(data);
  const mask = tf.ones([3, 8]) as tf.Tensor2D;
  const opt = new AdamW(m.variables(), { lr: 5e-3 });
  let loss = Infinity;
  for (let step = 0; step < 800 && loss >= 0.05; step++) {
    const { value, grads } = tf.variableGrads(() => lmLoss(m, ids, mask));
    opt.step(grads);
    loss = (await value.data())[0]!;
    tf.dispose([value, ...Object.values(grads)]);
  }
  assert.ok(loss < 0.05, `final loss ${loss}`);
  // The learned continuation is exact under greedy decoding.
  const lp = tf.tidy(() => tokenLogprobs(m, ids).logprobs);
  const probs = Array.from((await lp.data()) as Float32Array).map(Math.exp);
  assert.ok(Math.min(...probs) > 0.8, `min next-token prob ${Math.min(...probs)}`);
  opt.dispose();
  m.dispose();
});
