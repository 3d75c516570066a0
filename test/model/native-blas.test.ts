// The native BLAS matmul (vendor/rft-blas.node) against the wasm backend's own kernel: products with
// every transpose and batch layout, their gradients, the layers that change form with it, and a full
// transformer loss gradient. Skipped, saying why, only where the addon is not built.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { engineInfo, initEngine, tf } from '../../backend/model/engine.js';
import { loadNativeBlas, nativeBlasActive, setNativeBlasEnabled } from '../../backend/model/native-blas.js';
import {
  applyRope,
  applyRopeSeqFirst,
  embed,
  linear2d,
  linear2dT,
  rmsNorm,
  ropeTables,
  swiglu,
} from '../../backend/model/layers.js';
import { tokenLogprobs } from '../../backend/model/logprobs.js';
import { AdamW } from '../../backend/model/optim.js';
import { nativeOpsAvailable, nativeRopeAvailable, targetLogprobNative } from '../../backend/model/native-ops.js';
import { presetConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { lmLoss } from '../../backend/model/logprobs.js';
import { generate } from '../../backend/model/generate.js';
import { NativeDecoder } from '../../backend/model/native-decode.js';
import { ByteTestTokenizer } from '../helpers/byte-tokenizer.js';
import { Rng } from '../../backend/core/rng.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
await initEngine();
const info = engineInfo()!;
const skip =
  info.matmul?.kernel === 'native-blas'
    ? false
    : `native BLAS not active: ${info.matmul?.detail ?? `backend ${info.backend}`}`;

/** Run fn with the native matmul, then with the wasm one; both results as plain arrays. */
function both<T>(fn: () => T, read: (r: T) => Float32Array[]): [Float32Array[], Float32Array[]] {
  const out: Float32Array[][] = [];
  for (const on of [true, false]) {
    setNativeBlasEnabled(on);
    try {
      const r = fn();
      out.push(read(r));
    } finally {
      setNativeBlasEnabled(true);
    }
  }
  return [out[0]!, out[1]!];
}

function assertClose(a: Float32Array[], b: Float32Array[], tol: number, what: string): void {
  assert.equal(a.length, b.length, what);
  a.forEach((x, i) => {
    const y = b[i]!;
    assert.equal(x.length, y.length, `${what}[${i}] length`);
    let scale = 1e-6;
    for (let j = 0; j < y.length; j++) scale = Math.max(scale, Math.abs(y[j]!));
    for (let j = 0; j < x.length; j++) {
      if (!(Math.abs(x[j]! - y[j]!) <= tol * scale))
        assert.fail(`${what}[${i}][${j}]: native ${x[j]} vs wasm ${y[j]} (scale ${scale})`);
    }
  });
}

const rng = new Rng(7);
const rand = (shape: number[]) =>
  tf.tensor(
    Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rng.normal()),
    shape,
  );

test('native matmul matches the wasm kernel: transposes, batches and broadcasts, with gradients', { skip }, () => {
  const cases: { a: number[]; b: number[] }[] = [
    { a: [5, 7], b: [7, 3] },
    { a: [2, 3, 5, 7], b: [2, 3, 7, 4] },
    { a: [4, 5, 7], b: [7, 6] }, // b broadcast over the batch
    { a: [1, 5, 7], b: [3, 7, 2] }, // a broadcast
    { a: [2, 1, 5, 7], b: [1, 3, 7, 2] }, // a mixed broadcast: left to the wasm kernel
    { a: [1, 9], b: [9, 1] },
  ];
  for (const c of cases) {
    for (const tA of [false, true]) {
      for (const tB of [false, true]) {
        const r = c.a.length;
        const aShape = tA ? [...c.a.slice(0, -2), c.a[r - 1]!, c.a[r - 2]!] : c.a;
        const rb = c.b.length;
        const bShape = tB ? [...c.b.slice(0, -2), c.b[rb - 1]!, c.b[rb - 2]!] : c.b;
        const a = rand(aShape);
        const b = rand(bShape);
        const [nat, wasm] = both(
          () =>
            tf.tidy(() => {
              const y = tf.matMul(a, b, tA, tB);
              // tfjs' BatchMatMul gradient does not reduce broadcast batches: gradients for equal batches only.
              if (JSON.stringify(c.a.slice(0, -2)) !== JSON.stringify(c.b.slice(0, -2))) return [y];
              const w = tf.mul(tf.reshape(tf.range(0, y.size), y.shape), 0.01);
              const g = tf.grads((x: tf.Tensor, z: tf.Tensor) => tf.sum(tf.mul(tf.matMul(x, z, tA, tB), w)))([a, b]);
              return [y, ...g];
            }),
          (ts) => ts.map((t) => t.dataSync() as Float32Array),
        );
        assertClose(nat, wasm, 1e-5, `matMul ${JSON.stringify(c)} tA=${tA} tB=${tB}`);
        tf.dispose([a, b]);
      }
    }
  }
});

test('linear layers and the embedding give the same values and gradients in both matmul modes', { skip }, () => {
  const x = rand([6, 8]);
  const w = rand([8, 5]);
  const wt = rand([5, 8]);
  const table = rand([11, 8]);
  const ids = tf.tensor1d([3, 0, 10, 3, 7, 1], 'int32');
  const [nat, wasm] = both(
    () =>
      tf.tidy(() => {
        const f = (xi: tf.Tensor, wi: tf.Tensor, wti: tf.Tensor, ti: tf.Tensor) => {
          const h = tf.add(linear2d(xi as tf.Tensor2D, wi as tf.Tensor2D), 0);
          const e = embed(ti as tf.Tensor2D, ids);
          const y = linear2dT(tf.add(xi, e) as tf.Tensor2D, wti as tf.Tensor2D);
          return tf.add(tf.sum(tf.square(h)), tf.sum(tf.sin(y)));
        };
        return [f(x, w, wt, table), ...tf.grads(f)([x, w, wt, table])];
      }),
    (ts) => ts.map((t) => t.dataSync() as Float32Array),
  );
  assertClose(nat, wasm, 1e-5, 'layers');
  tf.dispose([x, w, wt, table, ids]);
});

test(
  'native rotary embeddings match the tfjs composition in both layouts, at an offset, with gradients (Llama-3 scaled tables)',
  { skip: skip || (nativeRopeAvailable() ? false : 'addon built without rope') },
  () => {
    const hd = 16;
    const { cos, sin, rot } = ropeTables(40, hd, 500000, {
      type: 'llama3',
      factor: 8,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositionEmbeddings: 16,
    });
    // Past the 65,536-element split threshold too, so the parts over the cores are covered.
    for (const [shape, start] of [
      [[2, 5, 3, hd], 7],
      [[4, 24, 16, hd], 0],
    ] as [[number, number, number, number], number][]) {
      const x = rand(shape);
      const w = rand(shape);
      const [nat, wasm] = both(
        () =>
          tf.tidy(() => {
            const f = (xi: tf.Tensor) =>
              tf.add(
                tf.sum(tf.mul(applyRopeSeqFirst(xi as tf.Tensor4D, cos, sin, rot, start), w)),
                tf.sum(tf.sin(applyRope(xi as tf.Tensor4D, cos, sin, rot, start))),
              );
            return [
              applyRopeSeqFirst(x as tf.Tensor4D, cos, sin, rot, start),
              applyRope(x as tf.Tensor4D, cos, sin, rot, start),
              tf.grad(f)(x),
            ];
          }),
        (ts) => ts.map((t) => t.dataSync() as Float32Array),
      );
      assertClose(nat, wasm, 1e-5, `rope ${shape.join('x')} from ${start}`);
      tf.dispose([x, w]);
    }
    assert.throws(() => applyRope(rand([1, 1, 41, hd]) as tf.Tensor4D, cos, sin, rot, 0), /past the table's 40/);
    tf.dispose([cos, sin, rot]);
  },
);

test(
  "the native ops' vectorised exp holds each element to float precision, over float's range and at its edges",
  { skip: skip || (nativeOpsAvailable() ? false : 'native ops off') },
  () => {
    // SwiGLU g * sigmoid(g) * u: exp(-g) over [-100, 100] crosses the overflow (88.7) and underflow
    // (-87.3) edges; checked element by element against a float64 reference, not against the largest.
    const gs = [-100, -88.8, -88.5, -87.5, -87.2, -30, -1e-3, 0, 1e-3, 0.5, 3, 30, 87.2, 87.5, 88.5, 100];
    for (let i = 0; i < 400; i++) gs.push(-95 + (190 * i) / 399);
    const g = tf.tensor1d(gs);
    const u = tf.tensor1d(gs.map((_, i) => 1 + (i % 3)));
    const got = swiglu(g, u).dataSync();
    gs.forEach((x, i) => {
      const xf = Math.fround(x); // the float the op sees: exp magnifies the input's rounding
      const want = (xf / (1 + Math.exp(-xf))) * (1 + (i % 3));
      const err = Math.abs(got[i]! - want);
      // exp(-g) overflows float past 88.72 (as libm's expf does): there the output is 0 for a true ~5e-37.
      if (!(err <= 4e-7 * Math.abs(want) + 1e-36)) assert.fail(`swiglu(${x}): ${got[i]} vs ${want}`);
    });
    // NaN stays NaN (a diverged activation must reach the trainer's finite check, not become a bound).
    assert.ok(Number.isNaN(swiglu(tf.tensor1d([Number.NaN]), tf.tensor1d([1])).dataSync()[0]!));
    // Log-probs: a row with a -Infinity logit (a banned token) and widely spread logits.
    const row = [0, -Infinity, 50, -50, 10, -87.9, 3];
    const lp = targetLogprobNative(tf.tensor2d([row]), tf.tensor1d([4], 'int32')).dataSync()[0]!;
    const lse = 50 + Math.log(row.reduce((a, z) => a + Math.exp(z - 50), 0));
    assert.ok(Math.abs(lp - (10 - lse)) <= 1e-5, `log-prob ${lp} vs ${10 - lse}`);
    tf.dispose([g, u]);
  },
);

test(
  'transformer loss and every parameter gradient agree between native (BLAS + fused attention) and wasm',
  { skip },
  () => {
    const cfg = presetConfig('tiny-0.4m', 64, {
      nLayers: 2,
      dModel: 32,
      nHeads: 4,
      nKvHeads: 2,
      dFF: 64,
      maxSeqLen: 32,
    });
    const m = new Transformer(cfg, 3);
    const ids = tf.tensor2d(
      Int32Array.from({ length: 3 * 12 }, () => rng.int(0, 64)),
      [3, 12],
      'int32',
    );
    // Row 0 is left-padded by 3; the loss skips padded positions (their outputs are undefined).
    const mask = tf.tensor2d(
      Float32Array.from({ length: 3 * 11 }, (_, i) => (i % 11 < 2 || i < 3 ? 0 : 1)),
      [3, 11],
    );
    const attn = tf.tensor2d(
      Float32Array.from({ length: 3 * 12 }, (_, i) => (i < 3 ? 0 : 1)),
      [3, 12],
    );
    const names = m
      .variables()
      .map((v) => v.name)
      .sort();
    const [nat, wasm] = both(
      () => {
        const { value, grads } = tf.variableGrads(() => lmLoss(m, ids, mask, attn as tf.Tensor2D));
        return [value, ...names.map((n) => grads[n]!)];
      },
      (ts) => {
        const r = ts.map((t) => t.dataSync() as Float32Array);
        tf.dispose(ts);
        return r;
      },
    );
    assertClose(nat, wasm, 1e-4, 'transformer');
    tf.dispose([ids, mask, attn]);
    m.dispose();
  },
);

test(
  'the native row and element ops split over the cores give the wasm values: RMSNorm, SwiGLU, the head log-prob, AdamW',
  { skip },
  async () => {
    // Sizes past the split thresholds (32,768 elements a part; AdamW 65,536): on a machine with two or
    // more BLAS threads each op runs in parts, RMSNorm's weight gradient as per-part sums added after.
    const x = rand([1024, 96]);
    const w = rand([96]);
    const g = rand([640, 256]);
    const u = rand([640, 256]);
    const logits = rand([700, 512]);
    const targets = tf.tensor1d(
      Array.from({ length: 700 }, (_, i) => (i * 37) % 512),
      'int32',
    );
    const [nat, wasm] = both(
      () => {
        const f = (a: tf.Tensor, b: tf.Tensor, c: tf.Tensor, d: tf.Tensor, l: tf.Tensor) =>
          tf.add(
            tf.add(
              tf.sum(tf.mul(rmsNorm(a, b as tf.Tensor1D, 1e-6), tf.mod(tf.reshape(tf.range(0, a.size), a.shape), 7))),
              tf.sum(tf.mul(swiglu(c, d), 0.5)),
            ),
            tf.sum(
              nativeOpsAvailable()
                ? targetLogprobNative(l as tf.Tensor2D, targets as tf.Tensor1D)
                : tf.sum(tf.mul(tf.logSoftmax(l), tf.oneHot(targets as tf.Tensor1D, 512)), 1),
            ),
          );
        return [f(x, w, g, u, logits), ...tf.grads(f)([x, w, g, u, logits])];
      },
      (ts) => {
        const r = ts.map((t) => t.dataSync() as Float32Array);
        tf.dispose(ts);
        return r;
      },
    );
    assertClose(nat, wasm, 1e-4, 'row and element ops');
    // AdamW on a 300k-element weight: the same step natively and with tfjs's ops.
    const steps = both(
      () => {
        const v = tf.variable(tf.tensor(Float32Array.from({ length: 300_000 }, (_, i) => Math.sin(i))));
        const opt = new AdamW([v], { lr: 1e-2, weightDecay: 0.1 });
        for (let i = 0; i < 2; i++) opt.step({ [v.name]: tf.mul(v, 0.3) });
        const out = v.clone();
        opt.dispose();
        v.dispose();
        return out;
      },
      (t) => {
        const r = [t.dataSync() as Float32Array];
        t.dispose();
        return r;
      },
    );
    assertClose(steps[0], steps[1], 1e-5, 'AdamW');
    tf.dispose([x, w, g, u, logits, targets]);
  },
);

test('the addon refuses products that reach outside the buffer', { skip }, () => {
  const { addon } = loadNativeBlas(ROOT);
  assert.ok(addon);
  const heap = new Float32Array(12);
  heap.set([1, 2, 3, 4, 5, 6, 7, 8]);
  addon.sgemm(heap.buffer, 0, 16, 32, 1, 2, 2, 2, 0, 0, 0, 0);
  assert.deepEqual(Array.from(heap.subarray(8)), [19, 22, 43, 50]);
  assert.throws(() => addon.sgemm(heap.buffer, 0, 16, 36, 1, 2, 2, 2, 0, 0, 0, 0), RangeError);
  assert.throws(() => addon.sgemm(heap.buffer, 0, 16, 32, 2, 2, 2, 2, 0, 0, 4, 4), RangeError);
  assert.throws(() => addon.sgemm(heap.buffer, 2, 16, 32, 1, 2, 2, 2, 0, 0, 0, 0), RangeError);
  assert.throws(
    () => (addon.sgemm as unknown as (...a: unknown[]) => void)(new Float32Array(4), 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0),
    TypeError,
  );
});

test(
  'RFT_NATIVE_BLAS=0 keeps the wasm matmul and says so',
  { skip: info.backend === 'wasm' ? false : `backend ${info.backend}` },
  () => {
    const script = `import { initEngine } from './backend/model/engine.ts'; const i = await initEngine({ backend: 'wasm' }); console.log(JSON.stringify(i.matmul));`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, RFT_NATIVE_BLAS: '0' },
    });
    assert.equal(r.status, 0, r.stderr);
    const matmul = JSON.parse(r.stdout.trim().split('\n').pop()!) as { kernel: string; detail: string };
    assert.deepEqual(matmul, { kernel: 'wasm', detail: 'off (RFT_NATIVE_BLAS=0)' });
    assert.equal(nativeBlasActive(), !skip);
  },
);

test(
  'Identity on wasm shares the buffer: a clone outlives its source with the same values',
  { skip: info.backend === 'wasm' ? false : `backend ${info.backend}` },
  () => {
    const a = rand([3, 4]);
    const want = Array.from(a.dataSync());
    const c = tf.clone(a);
    a.dispose();
    assert.deepEqual(Array.from(c.dataSync()), want);
    const g = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(tf.clone(x), 2)))(c);
    assert.deepEqual(
      Array.from(g.dataSync()),
      want.map(() => 2),
    );
    tf.dispose([c, g]);
  },
);

test(
  'native decoding samples the same tokens and log-probs as the tfjs decode (GQA, untied head, left padding)',
  { skip },
  async () => {
    const tok = new ByteTestTokenizer();
    for (const over of [
      { nKvHeads: 4, tieEmbeddings: true },
      { nKvHeads: 2, tieEmbeddings: false },
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
      const m = new Transformer(cfg, 11);
      const prompts = ['a', 'two words', 'a longer prompt'].map((p) => [tok.bosId, ...tok.encode(p)]);
      const runs = [];
      for (const flag of ['1', '0']) {
        process.env.RFT_NATIVE_DECODE = flag;
        try {
          runs.push(await generate(m, tok, prompts, { maxNewTokens: 16, temperature: 0.8, seed: 5, stopTokens: [] }));
        } finally {
          delete process.env.RFT_NATIVE_DECODE;
        }
      }
      const [nat, ref] = runs as [Awaited<ReturnType<typeof generate>>, Awaited<ReturnType<typeof generate>>];
      for (let i = 0; i < prompts.length; i++) {
        assert.deepEqual(nat[i]!.tokens, ref[i]!.tokens, `row ${i} tokens (${JSON.stringify(over)})`);
        nat[i]!.logprobs.forEach((lp, t) =>
          assert.ok(Math.abs(lp - ref[i]!.logprobs[t]!) < 1e-4, `row ${i} token ${t}: ${lp} vs ${ref[i]!.logprobs[t]}`),
        );
      }
      m.dispose();
    }
  },
);

test('the native decoder refuses token ids outside the vocabulary', { skip }, () => {
  const cfg = presetConfig('tiny-0.4m', 40, { dModel: 16, nLayers: 1, nHeads: 2, nKvHeads: 2, dFF: 32, maxSeqLen: 16 });
  const m = new Transformer(cfg, 1);
  const f = m.forward(tf.tensor2d([[1, 2, 3]], [1, 3], 'int32'), { returnCache: true });
  const dec = new NativeDecoder(m, f.cache!, 4);
  assert.throws(() => dec.step(Int32Array.from([40])), RangeError);
  assert.equal(dec.step(Int32Array.from([39])).length, 40);
  tf.dispose([f.logits, f.cache!.keyMask, ...f.cache!.layers.flatMap((l) => [l.k, l.v])]);
  m.dispose();
});

test(
  'fused RMSNorm, SwiGLU, attention and target log-prob match their tfjs compositions, with gradients',
  { skip },
  () => {
    const x = rand([3, 5, 16]);
    const w = rand([16]);
    const g = rand([3, 5, 16]);
    const u = rand([3, 5, 16]);
    const fn = (xi: tf.Tensor, wi: tf.Tensor, gi: tf.Tensor, ui: tf.Tensor) =>
      tf.add(
        tf.sum(tf.mul(rmsNorm(xi, wi as tf.Tensor1D, 1e-5), tf.cos(xi))),
        tf.sum(tf.mul(swiglu(gi, ui), tf.sin(gi))),
      );
    const cfg = presetConfig('tiny-0.4m', 50, {
      dModel: 16,
      nLayers: 1,
      nHeads: 4,
      nKvHeads: 2,
      dFF: 32,
      maxSeqLen: 16,
    });
    const m = new Transformer(cfg, 9);
    const ids = tf.tensor2d(
      Int32Array.from({ length: 2 * 9 }, () => rng.int(0, 50)),
      [2, 9],
      'int32',
    );
    const runs: Float32Array[][] = [];
    for (const flag of [undefined, '0']) {
      if (flag) process.env.RFT_NATIVE_OPS = process.env.RFT_NATIVE_ATTENTION = flag;
      try {
        runs.push(
          tf.tidy(() => {
            const ops = [fn(x, w, g, u), ...tf.grads(fn)([x, w, g, u])];
            const { value, grads } = tf.variableGrads(
              () => tf.sum(tf.mul(tokenLogprobs(m, ids, { temperature: 0.7 }).logprobs, tf.range(1, 9))) as tf.Scalar,
            );
            return [
              ...ops,
              value,
              ...Object.keys(grads)
                .sort()
                .map((k) => grads[k]!),
            ].map((t) => t.dataSync() as Float32Array);
          }),
        );
      } finally {
        delete process.env.RFT_NATIVE_OPS;
        delete process.env.RFT_NATIVE_ATTENTION;
      }
    }
    assertClose(runs[0]!, runs[1]!, 1e-4, 'fused ops');
    tf.dispose([x, w, g, u, ids]);
    m.dispose();
  },
);

test(
  'the fused AdamW update matches the tfjs one over several steps (weight decay, 1-D parameters kept out)',
  { skip },
  () => {
    const results: Float32Array[][] = [];
    for (const flag of [undefined, '0']) {
      if (flag) process.env.RFT_NATIVE_OPS = flag;
      try {
        const vars = [
          tf.variable(
            tf.tensor2d([
              [0.5, -1],
              [2, 0.25],
            ]),
          ),
          tf.variable(tf.tensor1d([1, -2, 3])),
        ];
        const opt = new AdamW(vars, { lr: 0.1, weightDecay: 0.01 });
        for (let s = 0; s < 3; s++) {
          const grads = {
            [vars[0]!.name]: tf.tensor2d([
              [0.1 * s, -0.2],
              [0.3, 1],
            ]),
            [vars[1]!.name]: tf.tensor1d([-1, 0.5 * s, 2]),
          };
          opt.step(grads);
          tf.dispose(Object.values(grads));
        }
        results.push(vars.map((v) => v.dataSync() as Float32Array));
        opt.dispose();
        tf.dispose(vars);
      } finally {
        delete process.env.RFT_NATIVE_OPS;
      }
    }
    assertClose(results[0]!, results[1]!, 1e-5, 'adamw');
  },
);
