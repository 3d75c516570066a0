// The per-op profile of `npm run bench -- gpu`: each hot op of a training step, forward and backward
// at one model shape's sizes, as the fused WGSL kernel and as tfjs's composition (RFT_WEBGPU_KERNELS=0),
// timed two ways: wall time with the queue drained (a read after the op waits for the GPU), and the
// GPU's own time summed over the op's dispatches from timestamp queries (tf.time's kernelMs) where the
// adapter has 'timestamp-query' (null where not). Also the training step with all, none and each
// kernel but one, which shows what each kernel saves in the real step.
import { tf } from '../backend/model/engine.js';
import type { ModelConfig } from '../backend/model/config.js';
import { headDim } from '../backend/model/config.js';
import { applyRopeSeqFirst, rmsNorm, ropeTables, swiglu } from '../backend/model/layers.js';
import { attentionUnfused } from '../backend/model/attention-unfused.js';
import { Transformer } from '../backend/model/transformer.js';
import { headLogprobs } from '../backend/model/logprobs.js';
import { AdamW } from '../backend/model/optim.js';
import { fusedOps } from '../backend/model/fused-ops.js';
import { WEBGPU_KERNELS_ENV } from '../backend/model/wgsl/index.js';
import { SPLITS, attentionWgsl, chooseSplit } from '../backend/model/wgsl/attention.js';
import { median } from './report.js';
import { trainTokensPerSecond, type Repeats } from './model-timing.js';

export interface OpTiming {
  op: string;
  /** Median wall ms of forward + backward with the queue drained. */
  wallMs: number;
  /** GPU ms summed over the op's dispatches (timestamp queries), or null without 'timestamp-query'. */
  gpuMs: number | null;
  dispatches: number;
}

/** One op's work: returns what to read to drain the queue (small), disposing the rest. */
type OpRun = () => tf.Tensor;

function rand(shape: number[], seed: number): tf.Tensor {
  return tf.randomUniform(shape, -1, 1, 'float32', seed);
}

/** Forward and backward of f with a fixed upstream gradient; returns a scalar of the gradients. */
function fwdBwd(f: (...xs: tf.Tensor[]) => tf.Tensor, xs: tf.Tensor[], dy: tf.Tensor): tf.Tensor {
  return tf.tidy(() => {
    const gs = tf.grads(f)(xs, dy);
    return tf.addN(gs.map((g) => tf.sum(tf.slice(tf.reshape(g, [-1]), [0], [1]))));
  });
}

/** The ops of one training step at the shape of cfg with B x T tokens, inputs made once. */
function makeOps(cfg: ModelConfig, B: number, T: number): { ops: Record<string, OpRun>; dispose: () => void } {
  const D = cfg.dModel;
  const hd = headDim(cfg);
  const H = cfg.nHeads;
  const KV = cfg.nKvHeads;
  const keep: tf.Tensor[] = [];
  const k = <X extends tf.Tensor>(t: X): X => (keep.push(t), t);
  const x = k(rand([B, T, D], 1));
  const w = k(rand([D], 2)) as tf.Tensor1D;
  const g = k(rand([B, T, cfg.dFF], 3));
  const u = k(rand([B, T, cfg.dFF], 4));
  const q = k(rand([B, T, H, hd], 5)) as tf.Tensor4D;
  const kk = k(rand([B, T, KV, hd], 6)) as tf.Tensor4D;
  const vv = k(rand([B, T, KV, hd], 7)) as tf.Tensor4D;
  const mask = k(tf.ones([B, T])) as tf.Tensor2D;
  const rope = ropeTables(cfg.maxSeqLen, hd, cfg.ropeTheta);
  keep.push(rope.cos, rope.sin, rope.rot);
  const dyX = k(rand([B, T, D], 8));
  const dyG = k(rand([B, T, cfg.dFF], 9));
  const dyQ = k(rand([B, T, H, hd], 10));
  const model = new Transformer(cfg, 11);
  const h = k(tf.mul(rand([B * T, D], 12), 2)) as tf.Tensor2D;
  const targets = k(tf.randomUniformInt([B * T], 0, cfg.vocabSize, 13)) as tf.Tensor1D;
  const dyN = k(rand([B * T], 14));
  const param = tf.variable(rand([D, cfg.dFF], 15), true, 'bench_adamw_param');
  const grad = k(rand([D, cfg.dFF], 16));
  const opt = new AdamW([param], { lr: 1e-4, weightDecay: 0.01 });
  const ops: Record<string, OpRun> = {
    rmsNorm: () => fwdBwd((a, b) => rmsNorm(a!, b as tf.Tensor1D, cfg.rmsEps), [x, w], dyX),
    swiglu: () => fwdBwd((a, b) => swiglu(a!, b!), [g, u], dyG),
    rope: () => fwdBwd((a) => applyRopeSeqFirst(a as tf.Tensor4D, rope.cos, rope.sin, rope.rot, 0), [q], dyQ),
    attention: () =>
      fwdBwd(
        (a, b, c) =>
          (fusedOps().attention ?? attentionUnfused)(a as tf.Tensor4D, b as tf.Tensor4D, c as tf.Tensor4D, mask),
        [q, kk, vv],
        dyQ,
      ),
    // The fused attention at each split of a row over threads (the op above uses chooseSplit's).
    ...Object.fromEntries(
      SPLITS.map((split) => [
        `attention_split${split}`,
        () =>
          fwdBwd(
            (a, b, c) => attentionWgsl(a as tf.Tensor4D, b as tf.Tensor4D, c as tf.Tensor4D, mask, split),
            [q, kk, vv],
            dyQ,
          ),
      ]),
    ),
    head: () => fwdBwd((a) => headLogprobs(model, a as tf.Tensor2D, targets).logprobs, [h], dyN),
    adamw: () => {
      opt.step({ [param.name]: grad });
      return tf.slice(tf.reshape(param, [-1]), [0], [1]);
    },
  };
  return {
    ops,
    dispose: () => {
      tf.dispose(keep);
      param.dispose();
      opt.dispose();
      model.dispose();
    },
  };
}

async function timeOp(run: OpRun, r: Repeats): Promise<{ wallMs: number; gpuMs: number | null }> {
  const walls: number[] = [];
  for (let i = 0; i < r.warmup + r.reps; i++) {
    const t0 = performance.now();
    const out = run();
    await out.data(); // waits for every submitted dispatch
    out.dispose();
    if (i >= r.warmup) walls.push(performance.now() - t0);
  }
  const backend = tf.backend() as unknown as { supportTimestampQuery?: boolean };
  let gpuMs: number | null = null;
  if (backend.supportTimestampQuery) {
    const gpus: number[] = [];
    for (let i = 0; i < r.reps; i++) {
      let out: tf.Tensor | undefined;
      const t = await tf.time(() => {
        out = run();
      });
      out?.dispose();
      gpus.push(t.kernelMs as number);
    }
    gpuMs = median(gpus);
  }
  return { wallMs: median(walls), gpuMs };
}

/** The split the fused attention picks at this shape (B x H x T rows). */
export function attentionSplitAt(cfg: ModelConfig, B: number, T: number): number {
  return chooseSplit(B * cfg.nHeads * T);
}

/** Every op, fused and as tfjs's composition: [{op, fused, tfjs}] (the attention_split ops: fused only, tfjs null). */
export async function profileOps(
  cfg: ModelConfig,
  B: number,
  T: number,
  r: Repeats,
): Promise<{ op: string; fused: OpTiming; tfjs: OpTiming | null }[]> {
  const { ops, dispose } = makeOps(cfg, B, T);
  const was = process.env[WEBGPU_KERNELS_ENV];
  const out: { op: string; fused: OpTiming; tfjs: OpTiming | null }[] = [];
  const { wgslDispatchCounts } = await import('../backend/model/wgsl/runner.js');
  try {
    for (const [op, run] of Object.entries(ops)) {
      const timing = async (kernels: string): Promise<OpTiming> => {
        process.env[WEBGPU_KERNELS_ENV] = kernels;
        const t = await timeOp(run, r);
        wgslDispatchCounts(true);
        const o = run();
        await o.data();
        o.dispose();
        const dispatches = [...wgslDispatchCounts(true).values()].reduce((a, b) => a + b, 0);
        return { op, ...t, dispatches };
      };
      // A forced split is a WGSL kernel whatever RFT_WEBGPU_KERNELS says: its baseline is attention's.
      out.push({ op, fused: await timing('1'), tfjs: op.startsWith('attention_split') ? null : await timing('0') });
    }
  } finally {
    if (was === undefined) delete process.env[WEBGPU_KERNELS_ENV];
    else process.env[WEBGPU_KERNELS_ENV] = was;
    dispose();
  }
  return out;
}

/** Training-step tokens/s with every kernel, none, and (leaveOneOut) each one left out ("-attention"). */
export async function stepWithKernels(
  cfg: ModelConfig,
  B: number,
  T: number,
  r: Repeats,
  leaveOneOut = true,
): Promise<Record<string, number>> {
  const names = ['rmsNorm', 'swiglu', 'rope', 'attention', 'targetLogprob,targetLogprobGrad', 'adamw'];
  const was = process.env[WEBGPU_KERNELS_ENV];
  const res: Record<string, number> = {};
  try {
    for (const [label, v] of [
      ['all', '1'],
      ['none', '0'],
      ...(leaveOneOut ? names : []).map((n) => [`-${n.split(',')[0]}`, names.filter((m) => m !== n).join(',')]),
    ] as [string, string][]) {
      process.env[WEBGPU_KERNELS_ENV] = v;
      res[label] = await trainTokensPerSecond(cfg, B, T, r);
    }
  } finally {
    if (was === undefined) delete process.env[WEBGPU_KERNELS_ENV];
    else process.env[WEBGPU_KERNELS_ENV] = was;
  }
  return res;
}
