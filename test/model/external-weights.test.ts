// Frozen base weights outside the wasm heap (backend/model/external-weights.ts): the same model
// loaded both ways gives the same log-probs, the same LoRA gradients and the same optimizer step;
// the heap holds only norms, biases, adapters and activations; checkpoints, exports, merging and
// weight sync see the same weights. Needs the native addon (skipped with the reason otherwise).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tf, initEngine } from '../../backend/model/engine.js';
import { hfTensors, loadCheckpoint, saveCheckpoint } from '../../backend/model/checkpoint.js';
import { tokenLogprobs } from '../../backend/model/logprobs.js';
import { makeLoraConfig } from '../../backend/model/lora.js';
import { AdamW } from '../../backend/model/optim.js';
import { exportHf } from '../../backend/model/export/hf.js';
import { externalWeightsAvailable, isExternalizable } from '../../backend/model/external-weights.js';
import { readSafetensors } from '../../backend/model/safetensors.js';
import { Transformer } from '../../backend/model/transformer.js';
import { makeConfig } from '../../backend/model/config.js';
import { makeHfModel, type HfModelSpec, TINY_QWEN2 } from '../../tools/hf-model.js';
import { assertF32Close, maxAbsDiff, ULPS } from '../helpers/f32-close.js';

await initEngine();
const skip = externalWeightsAvailable()
  ? false
  : 'frozen weights outside the heap need the wasm backend with vendor/rft-blas.node (sgemmExt)';
const root = mkdtempSync(join(tmpdir(), 'rft-extw-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

const QWEN2 = TINY_QWEN2;
const LLAMA3: HfModelSpec = {
  architecture: 'LlamaForCausalLM',
  tokenizer: 'llama3',
  hidden: 32,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  headDim: 12,
  intermediate: 48,
  tied: false,
  ropeTheta: 500000,
  ropeScaling: {
    rope_type: 'llama3',
    factor: 8,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 64,
  },
};

async function lp(model: Transformer, ids: number[]): Promise<number[]> {
  const t = tf.tidy(() => tokenLogprobs(model, tf.tensor2d([ids], [1, ids.length], 'int32')).logprobs);
  const out = [...((await t.data()) as Float32Array)];
  t.dispose();
  return out;
}

/** Gradients of -sum(log-probs) for the adapters, keyed by HF adapter name. */
function adapterGrads(model: Transformer, ids: number[]): Map<string, Float32Array> {
  const { grads, value } = tf.variableGrads(
    () => tf.neg(tf.sum(tokenLogprobs(model, tf.tensor2d([ids], [1, ids.length], 'int32')).logprobs)) as tf.Scalar,
    model.variables(),
  );
  const out = new Map<string, Float32Array>();
  for (const [n, g] of Object.entries(grads)) out.set(model.paramName(n), g.dataSync() as Float32Array);
  tf.dispose([...Object.values(grads), value]);
  return out;
}

/** The same adapters (seeded A, a non-zero B) on both models. */
function sameAdapters(a: Transformer, b: Transformer): void {
  const lora = makeLoraConfig({ rank: 4, alpha: 8 });
  a.addLora(lora, 5);
  b.addLora(lora, 5);
  for (const [n, v] of a.adapters) {
    if (n.includes('lora_B')) v.assign(tf.randomNormal(v.shape, 0, 0.3, 'float32', 7));
    b.adapters.get(n)!.assign(v);
  }
}

for (const [label, spec] of [
  ['Qwen2 (biases, tied head)', QWEN2],
  ['Llama-3 (rope_scaling llama3, head_dim 12, untied head)', LLAMA3],
] as const) {
  test(
    `${label}: outside the heap = in the heap for log-probs, LoRA gradients and one AdamW step; only small tensors stay in the heap`,
    { skip },
    async () => {
      const dir = makeHfModel(join(root, spec.architecture), spec);
      const before = tf.memory().numBytes;
      const inHeap = loadCheckpoint(dir).model;
      const heapBytes = tf.memory().numBytes - before;
      const outside = loadCheckpoint(dir, { external: true }).model;
      const outsideBytes = tf.memory().numBytes - before - heapBytes;
      // Every projection, the embedding table and (untied) head live outside; the heap keeps norms and biases.
      const extNames = outside.weightNames().filter(isExternalizable);
      assert.deepEqual([...outside.external.keys()].sort(), extNames.sort());
      assert.ok(
        extNames.includes('model.embed_tokens.weight') && extNames.includes('model.layers.1.mlp.down_proj.weight'),
      );
      assert.equal(extNames.includes('lm_head.weight'), !spec.tied);
      assert.ok(
        [...outside.params.keys()].every((n) => /norm\.weight$|_proj\.bias$/.test(n)),
        [...outside.params.keys()].join(),
      );
      const extValues = [...outside.external.values()].reduce((a, w) => a + w.data.length, 0);
      assert.equal(outsideBytes, heapBytes - 4 * extValues, 'the heap holds exactly the weights that are not outside');
      assert.deepEqual(outside.weightNames().sort(), inHeap.weightNames().sort());

      const ids = [1, 5, 900, 17, 4242, 33, 12, 7, 150, 2];
      const base = await lp(inHeap, ids);
      assertF32Close(await lp(outside, ids), base, ULPS.forward, 'base log-probs');

      sameAdapters(inHeap, outside);
      const adapted = await lp(inHeap, ids);
      assert.ok(maxAbsDiff(adapted, base) > 0.01, 'the adapters change the model');
      assertF32Close(await lp(outside, ids), adapted, ULPS.forward, 'adapted log-probs');
      assertF32Close(
        await lp(outside.base(), ids),
        base,
        ULPS.forward,
        'base() view (the KL reference) outside the heap',
      );

      const gIn = adapterGrads(inHeap, ids);
      const gOut = adapterGrads(outside, ids);
      assert.deepEqual([...gOut.keys()].sort(), [...gIn.keys()].sort());
      assert.equal(gIn.size, 2 * 7 * spec.layers, 'gradients for the adapters only');
      for (const [n, g] of gIn) {
        const scale = Math.max(1e-3, maxAbsDiff(g, new Float32Array(g.length)));
        assert.ok(maxAbsDiff(gOut.get(n)!, g) / scale < 1e-4, `gradient of ${n}`);
      }

      // One AdamW step on each: the same adapters after it, the same log-probs.
      for (const m of [inHeap, outside]) {
        const opt = new AdamW(m.variables(), { lr: 1e-2 });
        const { grads, value } = tf.variableGrads(
          () => tf.neg(tf.sum(tokenLogprobs(m, tf.tensor2d([ids], [1, ids.length], 'int32')).logprobs)) as tf.Scalar,
          m.variables(),
        );
        opt.step(grads);
        tf.dispose([...Object.values(grads), value]);
        opt.dispose();
      }
      const stepped = await lp(inHeap, ids);
      assert.ok(maxAbsDiff(stepped, adapted) > 1e-3, 'the step moved the model');
      assertF32Close(await lp(outside, ids), stepped, ULPS.twoPasses, 'log-probs after the step');
      for (const [n, v] of inHeap.adapters)
        assertF32Close(
          outside.adapters.get(n)!.dataSync(),
          v.dataSync(),
          ULPS.twoPasses,
          `adapter ${n} after the step`,
        );

      // The frozen base is untouched and effectiveWeight (exports, weight sync) sees the same merged weights.
      const extWeights = [...outside.external.values()].map((w) => w.data.slice());
      for (const name of inHeap.weightNames()) {
        const a = inHeap.effectiveWeight(name);
        const b = outside.effectiveWeight(name);
        assert.deepEqual(b.shape, a.shape, name);
        assertF32Close(b.dataSync(), a.dataSync(), ULPS.elementwise, `effective ${name}`);
        if (a !== inHeap.params.get(name)) a.dispose();
        if (b !== outside.params.get(name)) b.dispose();
      }
      [...outside.external.values()].forEach((w, i) => assert.deepEqual(w.data, extWeights[i]));
      assert.throws(() => outside.base().variables(), /outside the wasm heap/);
      inHeap.dispose();
      outside.dispose();
    },
  );
}

test(
  'checkpoint, HF export, clone and mergeAdapters with weights outside the heap give the in-heap results',
  { skip },
  async () => {
    const dir = makeHfModel(join(root, 'qwen2-io'), QWEN2);
    const inHeap = loadCheckpoint(dir).model;
    const outside = loadCheckpoint(dir, { external: true }).model;
    sameAdapters(inHeap, outside);
    const ids = [3, 8, 1000, 42, 9, 77, 5];
    const want = await lp(inHeap, ids);

    // hfTensors: merged and base tensors identical (names, shapes, values).
    for (const opts of [{}, { base: true }]) {
      const a = await hfTensors(inHeap, opts);
      const b = await hfTensors(outside, opts);
      assert.deepEqual([...b.keys()].sort(), [...a.keys()].sort());
      for (const [n, t] of a) {
        assert.deepEqual(b.get(n)!.shape, t.shape, n);
        assertF32Close(b.get(n)!.data, t.data, ULPS.elementwise, `${JSON.stringify(opts)} ${n}`);
      }
    }

    // A LoRA checkpoint saved from outside the heap loads back (either way) with the same log-probs.
    const ckDir = join(root, 'ck-outside');
    await saveCheckpoint(outside, ckDir, { version: 1, base_model: dir });
    for (const external of [false, true]) {
      const back = loadCheckpoint(ckDir, { external }).model;
      assert.equal(back.external.size > 0, external);
      assert.deepEqual(back.lora, outside.lora);
      assertF32Close(await lp(back, ids), want, ULPS.forward, `checkpoint reloaded (external: ${external})`);
      back.dispose();
    }

    // The HF export (adapters merged) re-imports as a plain model with the same log-probs, byte-equal to the in-heap export.
    const hfOut = await exportHf(outside, undefined, join(root, 'hf-outside'));
    const hfIn = await exportHf(inHeap, undefined, join(root, 'hf-inheap'));
    const tOut = readSafetensors(readFileSync(join(hfOut, 'model.safetensors')), hfOut).tensors;
    const tIn = readSafetensors(readFileSync(join(hfIn, 'model.safetensors')), hfIn).tensors;
    for (const [n, t] of tIn) assertF32Close(tOut.get(n)!.data, t.data, ULPS.elementwise, `export ${n}`);
    const merged = loadCheckpoint(hfOut).model;
    assertF32Close(await lp(merged, ids), want, ULPS.forward, 'the merged HF export re-imported');
    merged.dispose();

    // clone(): an independent copy, still outside; mergeAdapters folds adapters in place outside the heap.
    const copy = outside.clone();
    assert.ok(copy.external.size > 0);
    assertF32Close(await lp(copy, ids), want, ULPS.forward, 'clone()');
    copy.mergeAdapters();
    assert.equal(copy.lora, undefined);
    assertF32Close(await lp(copy, ids), want, ULPS.forward, 'merged in place outside the heap');
    assertF32Close(await lp(outside, ids), want, ULPS.forward, 'the clone shares nothing with its source');
    // copyFrom between the two kinds (outside <- in heap and back).
    const plain = loadCheckpoint(dir).model;
    plain.copyFrom(copy);
    assertF32Close(await lp(plain, ids), want, ULPS.forward, 'in heap <- outside');
    const back = loadCheckpoint(dir, { external: true }).model;
    back.copyFrom(plain);
    assertF32Close(await lp(back, ids), want, ULPS.forward, 'outside <- in heap');
    for (const m of [inHeap, outside, copy, plain, back]) m.dispose();
  },
);

test('LoRA dropout on a training pass: outside the heap = in the heap (same seeded masks)', { skip }, async () => {
  const dir = makeHfModel(join(root, 'qwen2-dropout'), QWEN2);
  const [a, b] = [loadCheckpoint(dir).model, loadCheckpoint(dir, { external: true }).model];
  const lora = makeLoraConfig({ rank: 4, alpha: 8, dropout: 0.5 });
  a.addLora(lora, 5);
  b.addLora(lora, 5);
  for (const [n, v] of a.adapters) {
    if (n.includes('lora_B')) v.assign(tf.randomNormal(v.shape, 0, 0.5, 'float32', 8));
    b.adapters.get(n)!.assign(v);
  }
  const ids = [4, 8, 15, 16, 23, 42, 108];
  const train = (m: Transformer) =>
    tf.tidy(
      () =>
        tokenLogprobs(m, tf.tensor2d([ids], [1, ids.length], 'int32'), {
          train: true,
        }).logprobs.dataSync() as Float32Array,
    );
  const ta = train(a);
  assert.ok(maxAbsDiff(ta, await lp(a, ids)) > 1e-3, 'dropout changed the training pass');
  // Issue 22: 1.14e-5 on log-probs near 10 on an AVX-512 EPYC against the old absolute 1e-5; a
  // dropped mask moves them by > 1e-3 (asserted just above), 25x the bound of 32 u at magnitude 12.
  assertF32Close(train(b), ta, ULPS.forward, 'training pass outside vs in the heap');
  a.dispose();
  b.dispose();
});

test('a seeded model built outside the heap is the seeded in-heap model', { skip }, async () => {
  const cfg = makeConfig({
    vocabSize: 64,
    dModel: 16,
    nLayers: 2,
    nHeads: 2,
    nKvHeads: 1,
    dFF: 24,
    maxSeqLen: 32,
    tieEmbeddings: false,
  });
  const a = new Transformer(cfg, 11);
  const b = new Transformer(cfg, 11, { external: true });
  const ids = [1, 2, 3, 60, 5, 6];
  assertF32Close(await lp(b, ids), await lp(a, ids), ULPS.forward, 'seeded outside vs in the heap');
  a.dispose();
  b.dispose();
});

test('without the addon (RFT_EXTERNAL_WEIGHTS=0) asking for weights outside the heap is refused by name; the in-heap path stays', async () => {
  const was = process.env.RFT_EXTERNAL_WEIGHTS;
  process.env.RFT_EXTERNAL_WEIGHTS = '0';
  try {
    assert.equal(externalWeightsAvailable(), false);
    const dir = makeHfModel(join(root, 'qwen2-off'), QWEN2);
    assert.throws(() => loadCheckpoint(dir, { external: true }), /outside the wasm heap need/);
    const m = loadCheckpoint(dir).model;
    assert.equal(m.external.size, 0);
    m.dispose();
  } finally {
    if (was === undefined) delete process.env.RFT_EXTERNAL_WEIGHTS;
    else process.env.RFT_EXTERNAL_WEIGHTS = was;
  }
});
