// `npm run bench -- model`: training step and KV-cache generation throughput of the transformer on
// the active tensor engine, beside the same model in PyTorch CPU (better of 1 and 2 threads).
import { fileURLToPath } from 'node:url';
import { initEngine, tf } from '../backend/model/engine.js';
import { countParams, presetConfig, type ModelConfig } from '../backend/model/config.js';
import { Transformer } from '../backend/model/transformer.js';
import { lmLoss } from '../backend/model/logprobs.js';
import { AdamW } from '../backend/model/optim.js';
import { generate } from '../backend/model/generate.js';
import { Rng } from '../backend/core/rng.js';
import { SPECIAL_TOKENS, type SpecialTokenName, type Tokenizer } from '../backend/model/tokenizer/types.js';
import { median, report } from './report.js';
import { runTorch } from './torch.js';

const VOCAB = 512;
const REPS = Number(process.env.BENCH_REPS ?? 5);
const WARMUP = 2;

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

/** Generation here needs only ids; a tokenizer that decodes nothing keeps text work out of the timing. */
const idsOnly: Tokenizer = {
  kind: 'char',
  vocabSize: VOCAB,
  padId: 0,
  bosId: 1,
  eosId: 2,
  specialId: (n: SpecialTokenName) => Object.keys(SPECIAL_TOKENS).indexOf(n),
  encode: () => [],
  decode: () => '',
  toJSON: () => ({}),
};

async function trainTokensPerSecond(cfg: ModelConfig, B: number, T: number): Promise<number> {
  const m = new Transformer(cfg, 1);
  const opt = new AdamW(m.variables(), { lr: 1e-3 });
  const rng = new Rng(1);
  const data = Int32Array.from({ length: B * (T + 1) }, () => rng.int(8, VOCAB));
  const ids = tf.tensor2d(data, [B, T + 1], 'int32');
  const mask = tf.ones([B, T]) as tf.Tensor2D;
  const times: number[] = [];
  for (let i = 0; i < WARMUP + REPS; i++) {
    const t0 = performance.now();
    const { value, grads } = tf.variableGrads(() => lmLoss(m, ids, mask));
    opt.step(grads);
    await value.data();
    tf.dispose([value, ...Object.values(grads)]);
    if (i >= WARMUP) times.push(performance.now() - t0);
  }
  tf.dispose([ids, mask]);
  opt.dispose();
  m.dispose();
  return (B * T) / (median(times) / 1000);
}

async function genTokensPerSecond(cfg: ModelConfig): Promise<number> {
  const m = new Transformer(cfg, 2);
  const rng = new Rng(2);
  const times: number[] = [];
  for (let i = 0; i < WARMUP + REPS; i++) {
    const prompts = Array.from({ length: GEN.batch }, () => Array.from({ length: GEN.promptLen }, () => rng.int(8, VOCAB)));
    const t0 = performance.now();
    await generate(m, idsOnly, prompts, { maxNewTokens: GEN.newTokens, stopTokens: [], seed: i });
    if (i >= WARMUP) times.push(performance.now() - t0);
  }
  m.dispose();
  return (GEN.batch * GEN.newTokens) / (median(times) / 1000);
}

const engine = await initEngine();
const torchScript = fileURLToPath(new URL('./torch_model.py', import.meta.url));
const matmul = engine.matmul?.kernel ?? engine.backend;
for (const s of SHAPES) {
  const cfg = presetConfig(s.preset, VOCAB);
  const torchArgs = { model: cfg, batch: s.batch, seq: s.seq, genBatch: GEN.batch, promptLen: GEN.promptLen, newTokens: GEN.newTokens, reps: REPS, warmup: WARMUP };
  // The machine is shared and its load moves: both sides run twice, alternating (PyTorch, this
  // engine, PyTorch, this engine), and each side's better run counts.
  const torch1 = runTorch<Record<string, number>>(torchScript, torchArgs);
  let train = await trainTokensPerSecond(cfg, s.batch, s.seq);
  let gen = await genTokensPerSecond(cfg);
  const torch2 = runTorch<Record<string, number>>(torchScript, torchArgs);
  train = Math.max(train, await trainTokensPerSecond(cfg, s.batch, s.seq));
  gen = Math.max(gen, await genTokensPerSecond(cfg));
  const t = torch1.result && torch2.result
    ? Object.fromEntries(Object.keys(torch1.result).map((k) => [k, Math.max(torch1.result![k]!, torch2.result![k]!)]))
    : (torch1.result ?? torch2.result);
  if (!t) console.error(`baseline unavailable: ${torch1.why ?? torch2.why}`);
  const bestTrain = t ? Math.max(t.train_1!, t.train_2!) : null;
  report({
    bench: 'model', figure: `train_step_${s.name}`, unit: 'tok/s', value: train,
    baseline: 'pytorch-cpu', baseline_value: bestTrain,
    backend: engine.backend, matmul, params: countParams(cfg), batch: `${s.batch}x${s.seq}`,
    torch_threads: t ? (t.train_1! >= t.train_2! ? 1 : 2) : null,
  });
  const bestGen = t ? Math.max(t.gen_1!, t.gen_2!) : null;
  report({
    bench: 'model', figure: `generate_kv_${s.name}`, unit: 'tok/s', value: gen,
    baseline: 'pytorch-cpu', baseline_value: bestGen,
    backend: engine.backend, matmul, params: countParams(cfg), batch: `${GEN.batch} prompts x ${GEN.newTokens} new`,
    torch_threads: t ? (t.gen_1! >= t.gen_2! ? 1 : 2) : null,
  });
}
