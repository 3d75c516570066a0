// `npm run bench -- model`: training step and KV-cache generation throughput of the transformer on
// the active tensor engine, beside the same model in PyTorch CPU (better of 1 and 2 threads).
import { fileURLToPath } from 'node:url';
import { initEngine } from '../backend/model/engine.js';
import { countParams, presetConfig } from '../backend/model/config.js';
import { report } from './report.js';
import { genTokensPerSecond, trainTokensPerSecond } from './model-timing.js';
import { runTorch, torchBlasFamily } from './torch.js';
import { nativeAddon } from '../backend/model/native-blas.js';

const VOCAB = 512;
const REPS = Number(process.env.BENCH_REPS ?? 5);
const WARMUP = 2;
const REPEATS = { reps: REPS, warmup: WARMUP };

interface Shape {
  name: string;
  preset: string;
  batch: number;
  seq: number;
}
const SHAPES: Shape[] = [
  { name: '0.4m', preset: 'tiny-0.4m', batch: 16, seq: 64 },
  { name: '3m', preset: 'small-3m', batch: 16, seq: 128 },
];
const GEN = { batch: 16, promptLen: 16, newTokens: 64 };

const engine = await initEngine();
const torchScript = fileURLToPath(new URL('./torch_model.py', import.meta.url));
const matmul = engine.matmul?.kernel ?? engine.backend;
// Which OpenBLAS kernel family each side ran (a ratio between two families measures the families).
const blasFamilies = {
  blas_family: engine.matmul?.kernel === 'native-blas' ? (nativeAddon()?.blasCore?.() ?? 'not OpenBLAS') : 'none',
  torch_blas_family: torchBlasFamily(),
};
for (const s of SHAPES) {
  const cfg = presetConfig(s.preset, VOCAB);
  const torchArgs = {
    model: cfg,
    batch: s.batch,
    seq: s.seq,
    genBatch: GEN.batch,
    promptLen: GEN.promptLen,
    newTokens: GEN.newTokens,
    reps: REPS,
    warmup: WARMUP,
  };
  // The machine is shared and its load moves: both sides run twice, alternating (PyTorch, this
  // engine, PyTorch, this engine), and each side's better run counts.
  const torch1 = runTorch<Record<string, number>>(torchScript, torchArgs);
  let train = await trainTokensPerSecond(cfg, s.batch, s.seq, REPEATS);
  let gen = await genTokensPerSecond(cfg, GEN, REPEATS);
  const torch2 = runTorch<Record<string, number>>(torchScript, torchArgs);
  train = Math.max(train, await trainTokensPerSecond(cfg, s.batch, s.seq, REPEATS));
  gen = Math.max(gen, await genTokensPerSecond(cfg, GEN, REPEATS));
  const t =
    torch1.result && torch2.result
      ? Object.fromEntries(Object.keys(torch1.result).map((k) => [k, Math.max(torch1.result![k]!, torch2.result![k]!)]))
      : (torch1.result ?? torch2.result);
  if (!t) console.error(`baseline unavailable: ${torch1.why ?? torch2.why}`);
  const bestTrain = t ? Math.max(t.train_1!, t.train_2!) : null;
  report({
    bench: 'model',
    figure: `train_step_${s.name}`,
    unit: 'tok/s',
    value: train,
    baseline: 'pytorch-cpu',
    baseline_value: bestTrain,
    backend: engine.backend,
    matmul,
    ...blasFamilies,
    params: countParams(cfg),
    batch: `${s.batch}x${s.seq}`,
    torch_threads: t ? (t.train_1! >= t.train_2! ? 1 : 2) : null,
  });
  const bestGen = t ? Math.max(t.gen_1!, t.gen_2!) : null;
  report({
    bench: 'model',
    figure: `generate_kv_${s.name}`,
    unit: 'tok/s',
    value: gen,
    baseline: 'pytorch-cpu',
    baseline_value: bestGen,
    backend: engine.backend,
    matmul,
    ...blasFamilies,
    params: countParams(cfg),
    batch: `${GEN.batch} prompts x ${GEN.newTokens} new`,
    torch_threads: t ? (t.gen_1! >= t.gen_2! ? 1 : 2) : null,
  });
}
