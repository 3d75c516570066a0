// `npm run bench -- gpu [--swiftshader | --cpu]`: a training step (loss, backward, AdamW) and KV-cache sampling
// of 16 sequences on the webgpu engine (Dawn), at issue 27's shapes (vocabulary 512), beside the same
// model in PyTorch CUDA (bench/torch_cuda.py, f32 and bf16 autocast, the faster counts) where Python
// has CUDA torch. Without a real GPU adapter it says so and exits 0; `--swiftshader` runs one tiny
// shape on SwiftShader to check the path (its figures measure a CPU emulation, not a GPU). Per shape it
// also profiles each fused WGSL kernel against tfjs's own kernels (bench/gpu-ops.ts; BENCH_GPU_OPS=0 skips).
// `--cpu` times the same shapes' step and sampling on this machine's CPU engine (no GPU, no PyTorch): the
// other side of auto's size threshold (WEBGPU_AUTO_MIN_PARAMS), one process per shape. BENCH_GPU_SHAPES=0.4m,25m
// picks shapes by name (3m:16x128 one of a name's shapes).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { initEngine } from '../backend/model/engine.js';
import { probeGpuAdapter, adapterName } from '../backend/model/webgpu.js';
import { countParams, headDim, presetConfig } from '../backend/model/config.js';
import { median, report } from './report.js';
import { genTokensPerSecond, trainTokensPerSecond } from './model-timing.js';
import { runTorch } from './torch.js';
import { attentionSplitAt, profileOps, stepWithKernels } from './gpu-ops.js';
import { compileWgslKernels, wgslDispatchCounts } from '../backend/model/wgsl/runner.js';
import { allWgslKernels } from '../backend/model/wgsl/index.js';
import { decodeKernels } from '../backend/model/wgsl/decode.js';
import { GPU_DECODE_ENV, GpuDecoder } from '../backend/model/webgpu-decode.js';

/** Times GpuDecoder.step's synchronous part (recording a step's dispatches) until stop(): median ms. */
function timeDecodeEncoding(): { stop(): number | null } {
  const proto = GpuDecoder.prototype;
  const step = proto.step;
  const ms: number[] = [];
  proto.step = function (this: GpuDecoder, tokens: Int32Array) {
    const t0 = performance.now();
    try {
      return step.call(this, tokens);
    } finally {
      ms.push(performance.now() - t0);
    }
  };
  return {
    stop() {
      proto.step = step;
      return ms.length > 0 ? median(ms) : null;
    },
  };
}

const VOCAB = 512;
const swiftshader = process.argv.includes('--swiftshader');
const cpu = process.argv.includes('--cpu');
const REPS = Number(process.env.BENCH_REPS ?? (swiftshader ? 2 : 5));
const WARMUP = swiftshader ? 1 : 2;
interface Shape {
  name: string;
  preset: string;
  batch: number;
  seq: number;
  /** false: step and sampling only, no per-op profile. */
  profile?: boolean;
}
const SHAPES: Shape[] = swiftshader
  ? [{ name: '0.4m', preset: 'tiny-0.4m', batch: 2, seq: 32 }]
  : [
      // tiny-0.4m at bench/model.ts's CPU shape: where auto's size threshold (WEBGPU_AUTO_MIN_PARAMS) is read off.
      { name: '0.4m', preset: 'tiny-0.4m', batch: 16, seq: 64 },
      { name: '3m', preset: 'small-3m', batch: 16, seq: 128 },
      { name: '3m', preset: 'small-3m', batch: 64, seq: 256 },
      // Between the table's sizes, for the threshold: sampling (launch-bound on the GPU) is where the CPU wins longest.
      { name: '25m', preset: 'medium-25m', batch: 8, seq: 256, profile: false },
      { name: '100m', preset: 'large-100m', batch: 8, seq: 256 },
    ].filter((s) => {
      // A name picks every shape of that size ('3m'); name:BxT one of them ('3m:16x128').
      const want = process.env.BENCH_GPU_SHAPES?.split(',');
      return !want || want.includes(s.name) || want.includes(`${s.name}:${s.batch}x${s.seq}`);
    });
const REPEATS = { reps: REPS, warmup: WARMUP };
const GEN = swiftshader ? { batch: 2, promptLen: 8, newTokens: 8 } : { batch: 16, promptLen: 16, newTokens: 64 };

if (swiftshader) process.env.RFT_WEBGPU_SWIFTSHADER = '1';
if (cpu && SHAPES.length > 1) {
  // One process per shape: a process that ran every shape in turn aborted in the wasm heap at 25m (docs/performance.md).
  for (const s of SHAPES) {
    const r = spawnSync(
      process.execPath,
      [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
      {
        env: { ...process.env, BENCH_GPU_SHAPES: `${s.name}:${s.batch}x${s.seq}` },
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    if (r.status !== 0)
      report({
        bench: 'gpu',
        figure: `train_step_${s.name}_${s.batch}x${s.seq}`,
        unit: 'tok/s',
        value: Number.NaN,
        error: `the CPU engine's process for ${s.preset} at ${s.batch} x ${s.seq} ended with ${r.status ?? r.signal} (see above)`,
      });
  }
  process.exit(0);
}
if (cpu) {
  // auto without a model size never takes the GPU: the CPU engine the threshold is measured against.
  const engine = await initEngine({ backend: 'auto' });
  const device = engine.matmul ? `${engine.backend} (${engine.matmul.kernel})` : engine.backend;
  for (const s of SHAPES) {
    const cfg = presetConfig(s.preset, VOCAB);
    const common = { backend: engine.backend, device, params: countParams(cfg) };
    const train = await trainTokensPerSecond(cfg, s.batch, s.seq, REPEATS);
    report({
      bench: 'gpu',
      figure: `train_step_${s.name}_${s.batch}x${s.seq}`,
      unit: 'tok/s',
      value: train,
      ...common,
    });
    const gen = await genTokensPerSecond(cfg, GEN, REPEATS);
    report({ bench: 'gpu', figure: `sample_kv_${s.name}_${GEN.batch}seq`, unit: 'tok/s', value: gen, ...common });
  }
  process.exit(0);
}
const { adapter, why } = await probeGpuAdapter();
if (!adapter || (adapter.fallback && !swiftshader)) {
  const reason = adapter ? `the only adapter is ${adapterName(adapter)}` : why;
  console.log(
    JSON.stringify({
      bench: 'gpu',
      skipped: `no GPU adapter: ${reason}; nothing measured (npm run bench -- gpu --swiftshader checks the path on SwiftShader)`,
    }),
  );
  process.exit(0);
}
const engine = await initEngine({ backend: 'webgpu' });
const device = engine.adapter!.name;
const torchScript = fileURLToPath(new URL('./torch_cuda.py', import.meta.url));
for (const s of SHAPES) {
  const cfg = presetConfig(s.preset, VOCAB);
  // A shader that does not compile stops the bench with the compiler's message (a dispatch of it would never finish).
  const compileErrors = await compileWgslKernels([...allWgslKernels([headDim(cfg)]), ...decodeKernels([headDim(cfg)])]);
  if (compileErrors.length > 0)
    throw new Error(`WGSL kernels failed to compile on ${device}: ${compileErrors.join('; ')}`);
  const torch = swiftshader
    ? { result: null, why: 'not compared on SwiftShader' }
    : runTorch<Record<string, number | string>>(torchScript, {
        model: cfg,
        batch: s.batch,
        seq: s.seq,
        genBatch: GEN.batch,
        promptLen: GEN.promptLen,
        newTokens: GEN.newTokens,
        reps: REPS,
        warmup: WARMUP,
      });
  const t = torch.result && !('skipped' in torch.result) ? (torch.result as Record<string, number>) : null;
  if (!t) console.error(`baseline unavailable: ${torch.why ?? (torch.result as { skipped?: string } | null)?.skipped}`);
  const common = {
    backend: 'webgpu',
    device,
    torch_device: t ? (torch.result as Record<string, string>).device : null,
    params: countParams(cfg),
  };
  report({
    bench: 'gpu',
    figure: `train_step_${s.name}_${s.batch}x${s.seq}`,
    unit: 'tok/s',
    value: await trainTokensPerSecond(cfg, s.batch, s.seq, REPEATS),
    baseline: 'pytorch-cuda',
    baseline_value: t ? Math.max(t.train_f32!, t.train_bf16!) : null,
    ...common,
  });
  // Sampling with the fused decode step (webgpu-decode.ts) and, in the same run, with tfjs's own kernels.
  wgslDispatchCounts(true);
  const encode = timeDecodeEncoding();
  const gen = await genTokensPerSecond(cfg, GEN, REPEATS);
  const encodeMs = encode.stop();
  const decodeSteps = (REPEATS.reps + REPEATS.warmup) * (GEN.newTokens - 1);
  const fusedDispatches = wgslDispatchCounts(true);
  const perStep = (name: string) =>
    [...fusedDispatches].filter(([k]) => k.startsWith(name)).reduce((a, [, n]) => a + n, 0) / decodeSteps;
  process.env[GPU_DECODE_ENV] = '0';
  const genTfjs = await genTokensPerSecond(cfg, GEN, REPEATS);
  delete process.env[GPU_DECODE_ENV];
  report({
    bench: 'gpu',
    figure: `sample_kv_${s.name}_${GEN.batch}seq`,
    unit: 'tok/s',
    value: gen,
    baseline: 'pytorch-cuda',
    baseline_value: t ? Math.max(t.gen_f32!, t.gen_bf16!) : null,
    ...common,
  });
  report({
    bench: 'gpu',
    figure: `sample_kv_fused_decode_${s.name}_${GEN.batch}seq`,
    unit: 'tok/s',
    value: gen,
    baseline: 'tfjs-webgpu-decode',
    baseline_value: genTfjs,
    // Dispatches of one decode step (the sampling's one included), against ~35 a layer for tfjs's.
    dispatches_per_step: Math.round(perStep('decode_')),
    // The host's share of a step: recording its dispatches (GpuDecoder.step returns before the GPU runs
    // them), against the whole step (B tokens).
    encode_ms_per_step: encodeMs,
    step_ms: gen > 0 ? (1000 * GEN.batch) / gen : null,
    ...common,
  });
  if (process.env.BENCH_GPU_OPS === '0' || s.profile === false) continue;
  // Where the time goes: each op fused vs tfjs's kernels (ms, lower is better), then the step without each kernel.
  for (const p of await profileOps(cfg, s.batch, s.seq, REPEATS)) {
    report({
      bench: 'gpu',
      figure: `op_${p.op}_${s.name}_${s.batch}x${s.seq}`,
      unit: 'ms',
      value: p.fused.wallMs,
      baseline: 'tfjs-webgpu-kernels',
      baseline_value: p.tfjs?.wallMs ?? null,
      gpu_ms: p.fused.gpuMs,
      baseline_gpu_ms: p.tfjs?.gpuMs ?? null,
      dispatches: p.fused.dispatches,
      ...(p.op.startsWith('attention') ? { chosen_split: attentionSplitAt(cfg, s.batch, s.seq) } : {}),
      ...common,
    });
  }
  const k = await stepWithKernels(cfg, s.batch, s.seq, REPEATS, !swiftshader); // SwiftShader: all and none only (minutes per step there)
  report({
    bench: 'gpu',
    figure: `train_step_kernels_${s.name}_${s.batch}x${s.seq}`,
    unit: 'tok/s',
    value: k.all!,
    baseline: 'no-fused-kernels',
    baseline_value: k.none!,
    without_each: k,
    ...common,
  });
}
process.exit(0);
