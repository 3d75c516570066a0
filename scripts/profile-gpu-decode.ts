// The host's share of the webgpu engine's fused decode step: how long GpuDecoder.step takes to record
// its dispatches (it returns before the GPU runs them) and the sampling call that submits them, for 16
// sequences of a preset. `node --import tsx scripts/profile-gpu-decode.ts [preset] [steps]`; on a
// machine without a GPU it runs on SwiftShader. SUBMIT_BATCH=100000 records a whole step before any of
// it is submitted, so an emulated GPU does not share the cores while a step is recorded
// (docs/performance.md, "The host's share of a fused decode step").
import { tf } from '../backend/model/engine.js';
import { presetConfig } from '../backend/model/config.js';
import { Transformer } from '../backend/model/transformer.js';
import { GpuDecoder } from '../backend/model/webgpu-decode.js';
import { startWebgpu } from '../test/helpers/on-backend.js';

const [preset = 'small-3m', stepsArg = '20'] = process.argv.slice(2);
const { skip } = await startWebgpu();
if (skip) throw new Error(skip);
if (process.env.SUBMIT_BATCH) tf.env().set('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE', Number(process.env.SUBMIT_BATCH));
const B = 16;
const T = 16;
const steps = Number(stepsArg);
const m = new Transformer(presetConfig(preset, 512), 1);
const ids = tf.tensor2d(
  Int32Array.from({ length: B * T }, (_, i) => i % 500),
  [B, T],
  'int32',
);
const mask = tf.ones([B, T]) as tf.Tensor2D;
const prefill = m.forward(ids, { attentionMask: mask, returnCache: true });
const dec = new GpuDecoder(m, prefill.cache!, steps);
const record: number[] = [];
const submit: number[] = [];
for (let s = 0; s < steps; s++) {
  const t0 = performance.now();
  dec.step(Int32Array.from({ length: B }, (_, b) => (b * 7 + s) % 500));
  const t1 = performance.now();
  // The sampling's call submits the step (Dawn checks the recorded commands and hands them to the
  // driver), records the sampler and starts the read; the GPU then runs while the await waits.
  const picked = dec.sample(new Float32Array(B).fill(0.5), 1);
  const t2 = performance.now();
  await picked;
  record.push(t1 - t0);
  submit.push(t2 - t1);
}
dec.dispose();
// The first two steps compile the pipelines.
const q = (xs: number[], f: number) => [...xs.slice(2)].sort((a, b) => a - b)[Math.floor((xs.length - 2) * f)]!;
const r = (x: number) => Math.round(x * 100) / 100;
console.log(
  JSON.stringify({
    preset,
    sequences: B,
    steps: steps - 2,
    dispatches_per_step: dec.dispatches + 1, // + the sampler
    record_ms_median: r(q(record, 0.5)),
    record_ms_p90: r(q(record, 0.9)),
    sample_and_submit_ms_median: r(q(submit, 0.5)),
  }),
);
