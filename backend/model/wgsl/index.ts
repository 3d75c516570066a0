// The webgpu engine's fused WGSL kernels, registered as its fused ops (RFT_WEBGPU_KERNELS narrows them).
import { registerFusedOps } from '../fused-ops.js';
import type { WgslKernel } from './runner.js';
import * as adamw from './adamw.js';
import * as attention from './attention.js';
import * as rmsnorm from './rmsnorm.js';
import * as rope from './rope.js';
import * as swiglu from './swiglu.js';
import * as logp from './target-logprob.js';

export const WEBGPU_KERNELS_ENV = 'RFT_WEBGPU_KERNELS';

export function installWebgpuKernels(): void {
  registerFusedOps(
    'webgpu',
    {
      rmsNorm: rmsnorm.rmsNormWgsl,
      swiglu: swiglu.swigluWgsl,
      rope: rope.ropeWgsl,
      attention: attention.attentionWgsl,
      targetLogprob: logp.targetLogprobWgsl,
      targetLogprobGrad: logp.targetLogprobGradWgsl,
      adamw: adamw.adamwWgsl,
    },
    WEBGPU_KERNELS_ENV,
  );
}

/**
 * Every kernel, with attention's for the given head sizes at each split (for compileWgslKernels; needs
 * the webgpu engine).
 */
export function allWgslKernels(headDims: number[]): WgslKernel[] {
  return [
    swiglu.forward,
    swiglu.backward,
    rope.kernel,
    adamw.kernel,
    rmsnorm.forward,
    rmsnorm.backwardRows,
    rmsnorm.backwardWeight,
    ...logp.allKernels(),
    ...headDims.flatMap((hd) => [
      attention.statsKernel(hd),
      ...attention.SPLITS.flatMap((s) => [
        attention.forwardKernel(hd, s),
        attention.dqKernel(hd, s),
        attention.dkvKernel(hd, s),
      ]),
    ]),
  ];
}
