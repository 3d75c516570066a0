// The webgpu engine's fused WGSL kernels (backend/model/wgsl) against the cpu engine's tfjs
// compositions of the same ops: values and gradients, through the functions the model calls
// (layers.ts, headLogprobs, AdamW), with the dispatch counts showing the fused kernel ran. Without a
// GPU this runs on SwiftShader (a CPU implementation of Vulkan), so shapes stay tiny; skipped, with
// the reason, where Dawn finds no adapter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tf } from '../../backend/model/engine.js';
import { rmsNorm, swiglu, applyRope, applyRopeSeqFirst, ropeTables } from '../../backend/model/layers.js';
import { fusedOps } from '../../backend/model/fused-ops.js';
import { compileWgslKernels, wgslDispatchCounts, wgslKernelErrors } from '../../backend/model/wgsl/runner.js';
import { allWgslKernels } from '../../backend/model/wgsl/index.js';
import { rowLanes } from '../../backend/model/wgsl/target-logprob.js';
import {
  SPLITS,
  attentionPlan,
  attentionWgsl,
  chooseSplit,
  dkvKernel,
  dqKernel,
  forwardKernel,
} from '../../backend/model/wgsl/attention.js';
import { makeConfig } from '../../backend/model/config.js';
import { attentionUnfused } from '../../backend/model/attention-unfused.js';
import { Transformer } from '../../backend/model/transformer.js';
import { headLogprobs, lmLoss } from '../../backend/model/logprobs.js';
import { AdamW } from '../../backend/model/optim.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';
import { on, startWebgpu } from '../helpers/on-backend.js';

delete process.env.RFT_WEBGPU_KERNELS;
const { skip } = await startWebgpu();

/** Deterministic values in [-scale, scale). */
function rand(n: number, seed: number, scale = 1): Float32Array {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return ((s / 2 ** 32) * 2 - 1) * scale;
  });
}

interface Input {
  data: Float32Array;
  shape: number[];
}

/** f's value and the gradients of sum(f(xs) * r) for a fixed random r, on one engine. */
async function valueAndGrads(
  backend: 'webgpu' | 'cpu',
  inputs: Input[],
  f: (...xs: tf.Tensor[]) => tf.Tensor,
): Promise<{ y: Float32Array; grads: Float32Array[] }> {
  return on(backend, async () => {
    const xs = inputs.map((i) => tf.tensor(i.data, i.shape));
    const y = f(...xs);
    const r = tf.tensor(rand(y.size, 99), y.shape);
    const grads = tf.grads((...a: tf.Tensor[]) => tf.sum(tf.mul(f(...a), r)))(xs);
    const out = {
      y: (await y.data()) as Float32Array,
      grads: (await Promise.all(grads.map((g) => g.data()))) as Float32Array[],
    };
    tf.dispose([...xs, y, r, ...grads]);
    return out;
  });
}

/** The op on webgpu (fused) = on cpu (tfjs composition), value and gradients; returns the WGSL dispatches. */
async function assertSameAsCpu(
  what: string,
  inputs: Input[],
  f: (...xs: tf.Tensor[]) => tf.Tensor,
  ulps: number = ULPS.forward,
): Promise<Map<string, number>> {
  const cpu = await valueAndGrads('cpu', inputs, f);
  wgslDispatchCounts(true);
  const gpu = await valueAndGrads('webgpu', inputs, f);
  const counts = wgslDispatchCounts(true);
  assertF32Close(gpu.y, cpu.y, ulps, `${what}: value`);
  gpu.grads.forEach((g, i) => assertF32Close(g, cpu.grads[i]!, ulps, `${what}: gradient of input ${i}`));
  return counts;
}

function assertRan(counts: Map<string, number>, ...kernels: string[]): void {
  for (const k of kernels)
    assert.ok((counts.get(k) ?? 0) > 0, `kernel ${k} ran (dispatches: ${JSON.stringify([...counts])})`);
}

test('every WGSL kernel compiles (attention at head sizes 6 and 64 at each split, and 128)', { skip }, async () => {
  // hd 6: scalar vectors; 64: vec4. Each split's kernels at hd 128 take SwiftShader ~7 s to compile; the
  // split-1 ones stand for them (the same template; the plan test checks their memory fit).
  const kernels = [...allWgslKernels([6, 64]), forwardKernel(128, 1), dqKernel(128, 1), dkvKernel(128, 1)];
  assert.ok(kernels.length >= 19);
  assert.deepEqual(await compileWgslKernels(kernels), []);
});

test('RMSNorm (rows narrower and wider than a workgroup): fused forward and backward = cpu', { skip }, async () => {
  for (const D of [40, 100]) {
    const counts = await assertSameAsCpu(
      `rmsNorm D=${D}`,
      [
        { data: rand(3 * 5 * D, 1, 2), shape: [3, 5, D] },
        { data: rand(D, 2), shape: [D] },
      ],
      (x, w) => rmsNorm(x, w as tf.Tensor1D, 1e-5),
    );
    assertRan(counts, 'rmsnorm', 'rmsnorm_grad_x', 'rmsnorm_grad_w');
  }
});

test('SwiGLU: fused forward and backward = cpu', { skip }, async () => {
  const counts = await assertSameAsCpu(
    'swiglu',
    [
      { data: rand(3 * 70, 3, 4), shape: [3, 70] },
      { data: rand(3 * 70, 4), shape: [3, 70] },
    ],
    (g, u) => swiglu(g, u),
  );
  assertRan(counts, 'swiglu', 'swiglu_grad');
});

test('RoPE on both layouts, at an offset: fused forward and backward = cpu', { skip }, async () => {
  const hd = 8;
  const tables = () => ropeTables(16, hd, 10000);
  const counts = await assertSameAsCpu(
    'rope [B, H, T, hd] from position 3',
    [{ data: rand(2 * 3 * 5 * hd, 5), shape: [2, 3, 5, hd] }],
    (x) => {
      const t = tables();
      return applyRope(x as tf.Tensor4D, t.cos, t.sin, t.rot, 3);
    },
  );
  assertRan(counts, 'rope');
  await assertSameAsCpu('rope [B, T, H, hd]', [{ data: rand(2 * 5 * 3 * hd, 6), shape: [2, 5, 3, hd] }], (x) => {
    const t = tables();
    return applyRopeSeqFirst(x as tf.Tensor4D, t.cos, t.sin, t.rot, 0);
  });
});

for (const [H, KV, hd] of [
  [4, 2, 8],
  [2, 2, 8],
  [3, 1, 6], // a head size that is not a multiple of 4: scalar vectors
] as const) {
  test(
    `attention (H ${H}, KV ${KV}, hd ${hd}, 70 positions: several query blocks and key tiles, right padding), at each split of a row over threads: fused = the unfused model path`,
    { skip },
    async () => {
      const B = 2;
      const T = 70;
      const maskData = new Float32Array(B * T).fill(1);
      for (let j = 61; j < T; j++) maskData[T + j] = 0; // row 1 is padded at the end
      const mask = { data: maskData, shape: [B, T] };
      const inputs = [
        { data: rand(B * T * H * hd, 7), shape: [B, T, H, hd] },
        { data: rand(B * T * KV * hd, 8), shape: [B, T, KV, hd] },
        { data: rand(B * T * KV * hd, 9), shape: [B, T, KV, hd] },
      ];
      const viaModel = (backend: 'webgpu' | 'cpu', split?: number) => (q: tf.Tensor, k: tf.Tensor, v: tf.Tensor) => {
        const m = tf.tensor2d(mask.data, [B, T]);
        const args = [q as tf.Tensor4D, k as tf.Tensor4D, v as tf.Tensor4D, m] as const;
        if (backend === 'cpu') return attentionUnfused(...args);
        // The registered op picks its split from the shape; the others force one.
        return split === undefined ? fusedOps().attention!(...args) : attentionWgsl(...args, split);
      };
      const cpu = await valueAndGrads('cpu', inputs, viaModel('cpu'));
      for (const split of [undefined, ...SPLITS]) {
        wgslDispatchCounts(true);
        const gpu = await valueAndGrads('webgpu', inputs, viaModel('webgpu', split));
        assertRan(
          wgslDispatchCounts(true),
          `attention_hd${hd}`,
          `attention_grad_stats_hd${hd}`,
          `attention_grad_q_hd${hd}`,
          `attention_grad_kv_hd${hd}`,
        );
        const at = `split ${split ?? `${chooseSplit(B * H * T)} (chosen)`}`;
        assertF32Close(gpu.y, cpu.y, ULPS.forward, `attention output, ${at}`);
        gpu.grads.forEach((g, i) =>
          assertF32Close(g, cpu.grads[i]!, ULPS.forward, `attention gradient of ${'qkv'[i]}, ${at}`),
        );
      }
    },
  );
}

test('attention plans: the split reaches the thread target, fits workgroup memory, and vectors are vec4 where hd allows', () => {
  assert.equal(chooseSplit(8 * 12 * 256), 4); // large-100m 8 x 256: 24,576 rows
  assert.equal(chooseSplit(64 * 8 * 256), 1); // small-3m 64 x 256: 131,072 rows
  assert.equal(chooseSplit(40_000), 2);
  for (const limit of [16384, 32768]) {
    for (const hd of [6, 8, 64, 128, 256]) {
      for (const split of SPLITS) {
        const p = attentionPlan(hd, split, 512, limit);
        assert.equal(p.w, hd % 4 === 0 ? 4 : 1);
        assert.ok(p.split >= split && p.rows * p.split === 64, `hd ${hd} split ${split}: ${JSON.stringify(p)}`);
        assert.ok(p.shared * p.w * 4 + 512 <= limit, `hd ${hd} split ${split} fits ${limit}: ${JSON.stringify(p)}`);
        assert.ok(p.shared >= 2 * p.tile * p.stride && (p.split === 1 || p.shared >= p.rows * p.nv));
      }
    }
  }
  // hd 256 at 16 KiB: a padded row is 1,040 bytes, so a tile of 4 keys (k and v) is the most that fits.
  assert.equal(attentionPlan(256, 1, 512, 16384).tile, 4);
  // A split-2 combine area of hd 256 (32 rows x 256 floats) is 32 KiB: doubled until it fits.
  assert.equal(attentionPlan(256, 2, 512, 16384).split, 8);
});

test(
  'attention with left padding: rows that see no key are zero, every real row = the unfused path',
  { skip },
  async () => {
    const [B, T, H, KV, hd] = [1, 9, 2, 1, 4];
    const maskData = Float32Array.from({ length: T }, (_, j) => (j < 3 ? 0 : 1));
    const q = rand(B * T * H * hd, 11);
    const k = rand(B * T * KV * hd, 12);
    const v = rand(B * T * KV * hd, 13);
    const run = (backend: 'webgpu' | 'cpu') =>
      on(backend, async () => {
        const args = [
          tf.tensor4d(q, [B, T, H, hd]),
          tf.tensor4d(k, [B, T, KV, hd]),
          tf.tensor4d(v, [B, T, KV, hd]),
        ] as const;
        const m = tf.tensor2d(maskData, [B, T]);
        const y = backend === 'webgpu' ? fusedOps().attention!(...args, m) : attentionUnfused(...args, m);
        const out = (await y.data()) as Float32Array;
        tf.dispose([...args, m, y]);
        return out;
      });
    const cpu = await run('cpu');
    const gpu = await run('webgpu');
    const row = H * hd;
    assert.deepEqual([...gpu.subarray(0, 3 * row)], new Array(3 * row).fill(0), 'padded rows with no visible key');
    assertF32Close(gpu.subarray(3 * row), cpu.subarray(3 * row), ULPS.forward, 'real rows');
  },
);

for (const [V, lanes] of [
  [300, 32], // 8 rows a workgroup, a chunk of 4 and one of 2 leave some empty
  [5000, 256], // a row a workgroup, 20 logits a thread
] as const) {
  test(
    `the chunked head, vocabulary ${V} (${lanes} threads a row): log-probs and entropies (temperature 0.7, three chunks) and their gradients in h and the head = cpu`,
    { skip },
    async () => {
      assert.equal(rowLanes(V), lanes);
      const cfg = makeConfig({
        vocabSize: V,
        dModel: 16,
        nLayers: 1,
        nHeads: 2,
        nKvHeads: 1,
        dFF: 32,
        maxSeqLen: 16,
        initStd: 0.5,
        tieEmbeddings: true,
      });
      const m = await on('cpu', () => new Transformer(cfg, 21));
      const N = 10;
      const h = rand(N * 16, 22, 2);
      const targets = Int32Array.from({ length: N }, (_, i) => (i * 37 + 5) % V);
      const run = (backend: 'webgpu' | 'cpu', withEntropy: boolean) =>
        on(backend, async () => {
          const hs = tf.tensor2d(h, [N, 16]);
          const t = tf.tensor1d(targets, 'int32');
          const wts = tf.tensor1d(rand(N, 23));
          const f = () => {
            const o = headLogprobs(m, hs, t, { temperature: 0.7, withEntropy, chunkRows: 4 });
            const s = tf.sum(tf.mul(o.logprobs, wts));
            return (o.entropy ? tf.add(s, tf.sum(tf.mul(o.entropy, tf.reverse(wts)))) : s) as tf.Scalar;
          };
          const o = headLogprobs(m, hs, t, { temperature: 0.7, withEntropy, chunkRows: 4 });
          const { grads } = tf.variableGrads(
            f,
            m.variables().filter((x) => x.name === m.p('model.embed_tokens.weight').name),
          );
          const dh = tf.grad(
            (x: tf.Tensor) =>
              headLogprobs(m, x as tf.Tensor2D, t, { temperature: 0.7, withEntropy, chunkRows: 4 }).logprobs,
          )(hs);
          const out = {
            lp: (await o.logprobs.data()) as Float32Array,
            ent: o.entropy ? ((await o.entropy.data()) as Float32Array) : undefined,
            dW: (await Object.values(grads)[0]!.data()) as Float32Array,
            dh: (await dh.data()) as Float32Array,
          };
          tf.dispose([hs, t, wts, o.logprobs, ...(o.entropy ? [o.entropy] : []), ...Object.values(grads), dh]);
          return out;
        });
      // Both cpu runs first: the model's variables move to the GPU on first use there, and never back.
      const cpuRuns = [await run('cpu', false), await run('cpu', true)];
      for (const withEntropy of [false, true]) {
        const cpu = cpuRuns[Number(withEntropy)]!;
        wgslDispatchCounts(true);
        const gpu = await run('webgpu', withEntropy);
        const counts = wgslDispatchCounts(true);
        assertRan(
          counts,
          withEntropy ? 'target_logprob_entropy' : 'target_logprob',
          withEntropy ? 'target_logprob_entropy_grad' : 'target_logprob_grad',
        );
        const what = withEntropy ? 'with entropy' : 'log-probs only';
        assertF32Close(gpu.lp, cpu.lp, ULPS.forward, `${what}: log-probs`, V);
        if (withEntropy) assertF32Close(gpu.ent!, cpu.ent!, ULPS.forward, `${what}: entropies`, V);
        assertF32Close(gpu.dW, cpu.dW, ULPS.forward, `${what}: head gradient`, V);
        assertF32Close(gpu.dh, cpu.dh, ULPS.forward, `${what}: hidden-state gradient`, V);
      }
      m.dispose();
    },
  );
}

test(
  'a target outside the vocabulary gets a NaN log-prob from the fused head, never a silent 0',
  { skip },
  async () => {
    const out = await on('webgpu', async () => {
      const z = tf.tensor2d(rand(2 * 5, 31), [2, 5]);
      const t = tf.tensor1d([1, 7], 'int32');
      const r = fusedOps().targetLogprob!(z, t, false).logp;
      const d = (await r.data()) as Float32Array;
      tf.dispose([z, t, r]);
      return d;
    });
    assert.ok(Number.isFinite(out[0]!) && out[0]! < 0);
    assert.ok(Number.isNaN(out[1]!));
  },
);

test('AdamW (weight decay on matrices, not on vectors): three fused steps = three cpu steps', { skip }, async () => {
  const shapes = [[6, 10], [10]];
  const init = shapes.map((s, i) =>
    rand(
      s.reduce((a, b) => a * b),
      40 + i,
    ),
  );
  const run = (backend: 'webgpu' | 'cpu') =>
    on(backend, async () => {
      const vars = shapes.map((s, i) => tf.variable(tf.tensor(init[i]!, s), true, `adamw_${backend}_${i}`));
      const opt = new AdamW(vars, { lr: 0.05, weightDecay: 0.1, beta2: 0.99 });
      for (let step = 0; step < 3; step++) {
        const grads = Object.fromEntries(
          vars.map((v, i) => [v.name, tf.tensor(rand(v.size, 50 + step * 7 + i), v.shape)]),
        );
        opt.step(grads);
        tf.dispose(Object.values(grads));
      }
      const out = await Promise.all(vars.map((v) => v.data()));
      const st = await opt.state();
      opt.dispose();
      tf.dispose(vars);
      return { out: out as Float32Array[], m: Object.values(st.m), v: Object.values(st.v) };
    });
  const cpu = await run('cpu');
  wgslDispatchCounts(true);
  const gpu = await run('webgpu');
  assert.equal(wgslDispatchCounts(true).get('adamw'), 6, 'one dispatch per tensor per step');
  gpu.out.forEach((x, i) => assertF32Close(x, cpu.out[i]!, ULPS.twoPasses, `parameter ${i} after 3 steps`));
  gpu.m.forEach((x, i) => assertF32Close(x, cpu.m[i]!, ULPS.twoPasses, `first moment ${i}`));
  gpu.v.forEach((x, i) => assertF32Close(x, cpu.v[i]!, ULPS.twoPasses, `second moment ${i}`));
});

test(
  "RFT_WEBGPU_KERNELS: 0 runs tfjs's kernels, a list runs only those, an unknown name is refused by name",
  { skip },
  async () => {
    const lossOf = async () =>
      on('webgpu', async () => {
        const cfg = makeConfig({
          vocabSize: 40,
          dModel: 16,
          nLayers: 1,
          nHeads: 2,
          nKvHeads: 1,
          dFF: 24,
          maxSeqLen: 12,
          initStd: 0.3,
        });
        const m = new Transformer(cfg, 5);
        const x = tf.tensor2d([[1, 5, 9, 3, 7, 2, 8, 4]], [1, 8], 'int32');
        const mask = tf.ones([1, 7]) as tf.Tensor2D;
        const l = lmLoss(m, x, mask);
        const v = (await l.data())[0]!;
        tf.dispose([x, mask, l]);
        m.dispose();
        return v;
      });
    try {
      wgslDispatchCounts(true);
      const fused = await lossOf();
      assertRan(wgslDispatchCounts(true), 'rmsnorm', 'rope', 'attention_hd8', 'swiglu', 'target_logprob');
      process.env.RFT_WEBGPU_KERNELS = '0';
      const plain = await lossOf();
      assert.equal(wgslDispatchCounts(true).size, 0, 'no WGSL kernel with RFT_WEBGPU_KERNELS=0');
      assertF32Close([fused], [plain], ULPS.forward, 'the loss with and without the fused kernels');
      process.env.RFT_WEBGPU_KERNELS = 'rmsNorm,swiglu';
      await lossOf();
      assert.deepEqual([...wgslDispatchCounts(true).keys()].sort(), ['rmsnorm', 'swiglu']);
      process.env.RFT_WEBGPU_KERNELS = 'rmsNorm,flash';
      await assert.rejects(lossOf(), /RFT_WEBGPU_KERNELS='rmsNorm,flash': unknown op flash/);
    } finally {
      delete process.env.RFT_WEBGPU_KERNELS;
    }
  },
);

test('a fused training step leaves no tensor behind', { skip }, async () => {
  await on('webgpu', async () => {
    const cfg = makeConfig({
      vocabSize: 40,
      dModel: 16,
      nLayers: 1,
      nHeads: 2,
      nKvHeads: 1,
      dFF: 24,
      maxSeqLen: 12,
      initStd: 0.3,
    });
    const m = new Transformer(cfg, 6);
    const opt = new AdamW(m.variables(), { lr: 1e-3 });
    const x = tf.tensor2d([[1, 5, 9, 3, 7, 2, 8, 4]], [1, 8], 'int32');
    const mask = tf.ones([1, 7]) as tf.Tensor2D;
    const step = async () => {
      const { value, grads } = tf.variableGrads(() => lmLoss(m, x, mask), m.variables());
      opt.step(grads);
      await value.data();
      tf.dispose([value, ...Object.values(grads)]);
    };
    await step();
    const before = tf.memory().numTensors;
    await step();
    assert.equal(tf.memory().numTensors, before);
    tf.dispose([x, mask]);
    opt.dispose();
    m.dispose();
  });
});

test('a disposed or empty input is refused naming the kernel and the input, not dispatched', { skip }, async () => {
  await on('webgpu', () => {
    const g = tf.tensor2d(rand(6, 60), [2, 3]);
    const u = tf.tensor2d(rand(6, 61), [2, 3]);
    u.dispose();
    assert.throws(() => swiglu(g, u), /WGSL kernel swiglu: input 1 \[2,3\] is disposed/);
    assert.throws(
      () => rmsNorm(tf.zeros([0, 4]), tf.ones([4]) as tf.Tensor1D, 1e-5),
      /WGSL kernel rmsnorm: input 0 is empty \[0,4\]/,
    );
    g.dispose();
  });
});

test('no WGSL kernel reported a compile or validation error', { skip }, async () => {
  await new Promise((r) => setTimeout(r, 50)); // the device reports errors asynchronously
  assert.deepEqual(wgslKernelErrors(), []);
});
