// `npm run bench -- model-hf-fit SHAPE`: does a LoRA training step of a real model's shape fit here?
// Builds the model (zero weights: only memory and time are measured), adds LoRA (rank 8, the seven
// projections), runs one AdamW step on a 1 x 256 batch and reports tensor bytes, bytes per base
// parameter, peak RSS and the step's time, or the error that stopped it. Run each shape in its own
// process: on the wasm engine every tensor lives in one 4 GiB heap, so a model too large aborts.
import { initEngine, tf } from '../backend/model/engine.js';
import { countParams, makeConfig, type ModelConfigInput } from '../backend/model/config.js';
import { Transformer } from '../backend/model/transformer.js';
import { lmLoss } from '../backend/model/logprobs.js';
import { AdamW } from '../backend/model/optim.js';
import { makeLoraConfig } from '../backend/model/lora.js';
import { report } from './report.js';

const SHAPES: Record<string, ModelConfigInput> = {
  'smollm2-135m': { vocabSize: 49152, dModel: 576, nLayers: 30, nHeads: 9, nKvHeads: 3, dFF: 1536, maxSeqLen: 2048, tieEmbeddings: true },
  'smollm2-360m': { vocabSize: 49152, dModel: 960, nLayers: 32, nHeads: 15, nKvHeads: 5, dFF: 2560, maxSeqLen: 2048, tieEmbeddings: true },
  'qwen2.5-0.5b': { vocabSize: 151936, dModel: 896, nLayers: 24, nHeads: 14, nKvHeads: 2, dFF: 4864, maxSeqLen: 2048, tieEmbeddings: true, attnBias: true },
  'qwen3-0.6b': { vocabSize: 151936, dModel: 1024, nLayers: 28, nHeads: 16, nKvHeads: 8, headDim: 128, dFF: 3072, maxSeqLen: 2048, tieEmbeddings: true, qkNorm: true },
  'llama-3.2-1b': { vocabSize: 128256, dModel: 2048, nLayers: 16, nHeads: 32, nKvHeads: 8, dFF: 8192, maxSeqLen: 2048, tieEmbeddings: true },
};
const name = process.argv[2] ?? '';
const shape = SHAPES[name];
if (!shape) {
  console.error(`usage: npm run bench -- model-hf-fit <${Object.keys(SHAPES).join('|')}>`);
  process.exit(2);
}
const engine = await initEngine();
const cfg = makeConfig(shape);
const params = countParams(cfg);
const T = Number(process.env.FIT_TOKENS ?? 256);
const t0 = performance.now();
try {
  const m = new Transformer(cfg, 0, { init: false });
  const baseBytes = tf.memory().numBytes;
  m.addLora(makeLoraConfig({ rank: 8, alpha: 16 }), 1);
  const opt = new AdamW(m.variables(), { lr: 1e-4 });
  const stateBytes = tf.memory().numBytes;
  const ids = tf.tensor2d(Int32Array.from({ length: T + 1 }, (_, i) => 10 + (i % 1000)), [1, T + 1], 'int32');
  const mask = tf.ones([1, T]) as tf.Tensor2D;
  const s0 = performance.now();
  const { value, grads } = tf.variableGrads(() => lmLoss(m, ids, mask), m.variables());
  opt.step(grads);
  await value.data();
  const stepS = (performance.now() - s0) / 1000;
  tf.dispose([value, ...Object.values(grads), ids, mask]);
  report({
    bench: 'model-hf-fit', figure: `lora_step_${name}`, unit: 's', value: stepS, fits: true,
    backend: engine.backend, params, adapter_params: m.variables().reduce((a, v) => a + v.size, 0),
    tensor_bytes_before_step: stateBytes, bytes_per_base_param: stateBytes / params, base_bytes: baseBytes,
    peak_rss_mib: Math.round(process.resourceUsage().maxRSS / 1024), batch: `1x${T}`, total_s: (performance.now() - t0) / 1000,
  });
} catch (e) {
  report({ bench: 'model-hf-fit', figure: `lora_step_${name}`, unit: 's', value: NaN, fits: false, error: String((e as Error).message ?? e).slice(0, 300), backend: engine.backend, params, peak_rss_mib: Math.round(process.resourceUsage().maxRSS / 1024) });
  process.exitCode = 1;
}
