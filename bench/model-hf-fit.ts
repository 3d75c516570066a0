// `npm run bench -- model-hf-fit SHAPE [--heap | --compare]`: does a LoRA training step of a real
// model's shape fit here? Builds the model (fixed pseudo-random weights, every page touched: only
// memory and time are measured), adds LoRA (rank 8, the seven projections), runs one AdamW step on a
// 1 x FIT_TOKENS batch (default 256) and reports the step's time, bytes per base parameter in the
// wasm heap and outside it, and peak RSS, or the error that stopped it.
//   (default)  frozen weights outside the wasm heap (backend/model/external-weights.ts) when the
//              native addon has sgemmExt, else in the heap;
//   --heap     every weight in the heap (the wasm engine's single 4 GiB heap);
//   --compare  both models in this one process, FIT_STEPS (default 3) timed steps each, alternated,
//              after a warm-up step each, and their ratio (the speed cost of keeping the weights outside).
// On the webgpu engine (RFT_BACKEND=webgpu) every weight is a GPU buffer: it reports the GPU bytes per
// base parameter and the device's buffer limits, and a model too large for the GPU is `fits: false`
// with the engine's error (a weight over the largest buffer is refused at build; an allocation that
// fails makes the step's read throw: backend/model/gpu-guard.ts), so a ladder of shapes, one process
// each, finds the largest that trains with LoRA on that GPU.
// Run each shape in its own process: a model too large for the heap aborts it.
import { initEngine, tf } from '../backend/model/engine.js';
import { countParams, makeConfig, type ModelConfigInput } from '../backend/model/config.js';
import { Transformer } from '../backend/model/transformer.js';
import { lmLoss } from '../backend/model/logprobs.js';
import { AdamW } from '../backend/model/optim.js';
import { makeLoraConfig } from '../backend/model/lora.js';
import { externalWeightsAvailable } from '../backend/model/external-weights.js';
import { report } from './report.js';

const SHAPES: Record<string, ModelConfigInput> = {
  'smollm2-135m': {
    vocabSize: 49152,
    dModel: 576,
    nLayers: 30,
    nHeads: 9,
    nKvHeads: 3,
    dFF: 1536,
    maxSeqLen: 2048,
    tieEmbeddings: true,
  },
  'smollm2-360m': {
    vocabSize: 49152,
    dModel: 960,
    nLayers: 32,
    nHeads: 15,
    nKvHeads: 5,
    dFF: 2560,
    maxSeqLen: 2048,
    tieEmbeddings: true,
  },
  'qwen2.5-0.5b': {
    vocabSize: 151936,
    dModel: 896,
    nLayers: 24,
    nHeads: 14,
    nKvHeads: 2,
    dFF: 4864,
    maxSeqLen: 2048,
    tieEmbeddings: true,
    attnBias: true,
  },
  'qwen3-0.6b': {
    vocabSize: 151936,
    dModel: 1024,
    nLayers: 28,
    nHeads: 16,
    nKvHeads: 8,
    headDim: 128,
    dFF: 3072,
    maxSeqLen: 2048,
    tieEmbeddings: true,
    qkNorm: true,
  },
  'qwen2.5-1.5b': {
    vocabSize: 151936,
    dModel: 1536,
    nLayers: 28,
    nHeads: 12,
    nKvHeads: 2,
    dFF: 8960,
    maxSeqLen: 2048,
    tieEmbeddings: true,
    attnBias: true,
  },
  'qwen2.5-3b': {
    vocabSize: 151936,
    dModel: 2048,
    nLayers: 36,
    nHeads: 16,
    nKvHeads: 2,
    dFF: 11008,
    maxSeqLen: 2048,
    tieEmbeddings: true,
    attnBias: true,
  },
  'qwen2.5-7b': {
    vocabSize: 152064,
    dModel: 3584,
    nLayers: 28,
    nHeads: 28,
    nKvHeads: 4,
    dFF: 18944,
    maxSeqLen: 2048,
    tieEmbeddings: false,
    attnBias: true,
  },
  'llama-3.1-8b': {
    vocabSize: 128256,
    dModel: 4096,
    nLayers: 32,
    nHeads: 32,
    nKvHeads: 8,
    dFF: 14336,
    maxSeqLen: 2048,
    tieEmbeddings: false,
  },
  'llama-3.2-1b': {
    vocabSize: 128256,
    dModel: 2048,
    nLayers: 16,
    nHeads: 32,
    nKvHeads: 8,
    dFF: 8192,
    maxSeqLen: 2048,
    tieEmbeddings: true,
  },
};
const name = process.argv[2] ?? '';
const shape = SHAPES[name];
const mode = process.argv.includes('--compare') ? 'compare' : process.argv.includes('--heap') ? 'heap' : 'default';
if (!shape) {
  console.error(`usage: npm run bench -- model-hf-fit <${Object.keys(SHAPES).join('|')}> [--heap | --compare]`);
  process.exit(2);
}
const engine = await initEngine();
const cfg = makeConfig(shape);
const params = countParams(cfg);
const T = Number(process.env.FIT_TOKENS ?? 256);
const rssMib = () => Math.round(process.resourceUsage().maxRSS / 1024);

/** Small non-zero weights written to every page (zero pages never touched would not count in RSS). */
function fill(m: Transformer): void {
  const val = (i: number) => ((((i * 2654435761) >>> 0) % 2001) - 1000) * 2e-5;
  for (const w of m.external.values()) {
    const d = w.data;
    for (let i = 0; i < d.length; i++) d[i] = val(i);
  }
  for (const [n, v] of m.params) {
    if (v.rank !== 2) continue; // norms keep their ones, biases their zeros
    const d = new Float32Array(v.size);
    for (let i = 0; i < d.length; i++) d[i] = val(i);
    tf.tidy(() => v.assign(tf.tensor(d, v.shape)));
    void n;
  }
}

/** Bytes on the GPU (webgpu: tfjs's count of its GPU buffers), else undefined. */
const gpuBytes = () => (tf.memory() as { numBytesInGPU?: number }).numBytesInGPU;

function build(external: boolean) {
  const before = tf.memory().numBytes;
  const m = new Transformer(cfg, 0, { init: false, external });
  fill(m);
  m.addLora(makeLoraConfig({ rank: 8, alpha: 16 }), 1);
  const opt = new AdamW(m.variables(), { lr: 1e-4 });
  const heapBytes = tf.memory().numBytes - before;
  const outsideBytes = [...m.external.values()].reduce((a, w) => a + w.data.byteLength, 0);
  return { m, opt, heapBytes, outsideBytes };
}

async function step(m: Transformer, opt: AdamW): Promise<number> {
  const ids = tf.tensor2d(
    Int32Array.from({ length: T + 1 }, (_, i) => 10 + ((i * 7919) % 1000)),
    [1, T + 1],
    'int32',
  );
  const mask = tf.ones([1, T]) as tf.Tensor2D;
  const s0 = performance.now();
  const { value, grads } = tf.variableGrads(() => lmLoss(m, ids, mask), m.variables());
  opt.step(grads);
  // (A read through the engine: on webgpu it throws when the GPU failed during the step.)
  await value.data();
  const s = (performance.now() - s0) / 1000;
  tf.dispose([value, ...Object.values(grads), ids, mask]);
  return s;
}

const t0 = performance.now();
if (mode === 'compare') {
  if (!externalWeightsAvailable()) {
    console.error('--compare needs the native addon with sgemmExt (vendor/rft-blas.node)');
    process.exit(1);
  }
  const n = Number(process.env.FIT_STEPS ?? 3);
  const times = { heap: 0, outside: 0 };
  // Both models at once, steps alternated: a shared machine's load drifts, and both see the same drift.
  const heap = build(false);
  const outside = build(true);
  await step(heap.m, heap.opt); // warm-up
  await step(outside.m, outside.opt);
  for (let i = 0; i < n; i++) {
    times.heap += (await step(heap.m, heap.opt)) / n;
    times.outside += (await step(outside.m, outside.opt)) / n;
  }
  for (const b of [heap, outside]) {
    b.opt.dispose();
    b.m.dispose();
  }
  report({
    bench: 'model-hf-fit',
    figure: `lora_step_outside_vs_heap_${name}`,
    unit: 's',
    value: times.outside,
    baseline: 'weights in the wasm heap',
    baseline_value: times.heap,
    ratio: times.heap / times.outside,
    backend: engine.backend,
    params,
    batch: `1x${T}`,
    steps: n,
    peak_rss_mib: rssMib(),
  });
} else {
  const external = mode === 'default' && externalWeightsAvailable();
  try {
    const { m, opt, heapBytes, outsideBytes } = build(external);
    const stepS = await step(m, opt);
    report({
      bench: 'model-hf-fit',
      figure: `lora_step_${name}`,
      unit: 's',
      value: stepS,
      fits: true,
      weights: weightsWhere(external),
      backend: engine.backend,
      params,
      adapter_params: m.variables().reduce((a, v) => a + v.size, 0),
      heap_bytes_per_base_param: heapBytes / params,
      outside_bytes_per_base_param: outsideBytes / params,
      ...gpuFigures(),
      peak_rss_mib: rssMib(),
      batch: `1x${T}`,
      total_s: (performance.now() - t0) / 1000,
    });
  } catch (e) {
    report({
      bench: 'model-hf-fit',
      figure: `lora_step_${name}`,
      unit: 's',
      value: NaN,
      fits: false,
      weights: weightsWhere(external),
      error: String((e as Error).message ?? e).slice(0, 400),
      backend: engine.backend,
      params,
      ...gpuFigures(),
      peak_rss_mib: rssMib(),
    });
    process.exitCode = 1;
  }
}

/** On webgpu: the adapter, its buffer limits, and the GPU bytes per base parameter after the step. */
function gpuFigures(): Record<string, unknown> {
  if (engine.backend !== 'webgpu') return {};
  const limits = (tf.backend() as unknown as { device: { limits: Record<string, number> } }).device.limits;
  return {
    adapter: engine.adapter?.name,
    max_buffer_bytes: limits.maxBufferSize,
    max_storage_binding_bytes: limits.maxStorageBufferBindingSize,
    // tfjs uploads a weight at its first use (after build little is on the GPU): the bytes after the step
    // are the model's, LoRA's and AdamW's.
    gpu_bytes_per_base_param: (gpuBytes() ?? 0) / params,
  };
}

function weightsWhere(external: boolean): string {
  return engine.backend === 'webgpu' ? 'on the GPU' : external ? 'frozen outside the heap' : 'in the heap';
}
