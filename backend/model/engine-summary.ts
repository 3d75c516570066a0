// Which tensor engine the runs this process starts will use, without starting one (no tfjs here):
// for the editor's status bar (`server/engine`). RFT_BACKEND decides, as in engine.ts; for webgpu and
// auto the adapter is probed (Dawn; auto names the model size from which it takes the GPU), for the CPU engine the native addon's status and OpenBLAS kernel family
// are read from vendor/rft-blas.status.json.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EngineSummary } from '../core/protocol.js';
import { packageRoot } from '../core/package-root.js';
import { adapterName, probeGpuAdapter, WEBGPU_AUTO_MIN_PARAMS } from './webgpu.js';

export async function engineSummary(env: NodeJS.ProcessEnv = process.env): Promise<EngineSummary> {
  const requested = (env.RFT_BACKEND ?? 'auto').toLowerCase();
  if (requested === 'webgpu' || requested === 'gpu') {
    const { adapter, why } = await probeGpuAdapter();
    if (!adapter)
      return { requested, engine: 'webgpu', ok: false, detail: `no GPU adapter: ${why}; runs stop with this reason` };
    return {
      requested,
      engine: 'webgpu',
      ok: true,
      adapter: adapterName(adapter),
      fallback: adapter.fallback,
      detail: `GPU adapter ${adapterName(adapter)}`,
    };
  }
  if (requested === 'cpu')
    return { requested, engine: 'cpu', ok: true, detail: 'plain JavaScript kernels (RFT_BACKEND=cpu)' };
  const status = join(packageRoot(), 'vendor', 'rft-blas.status.json');
  let blas = 'the WebAssembly matmul (native addon not built)';
  if (existsSync(status)) {
    try {
      const s = JSON.parse(readFileSync(status, 'utf8')) as { ok?: boolean; detail?: string; blas_core?: string };
      blas = s.ok
        ? `native BLAS${s.blas_core ? ` (OpenBLAS ${s.blas_core})` : ''}`
        : `the WebAssembly matmul (${s.detail ?? 'addon not built'})`;
    } catch {
      /* unreadable status: the generic line */
    }
  }
  const cpu = `CPU: WebAssembly with ${blas}`;
  if (requested !== 'auto') return { requested, engine: 'cpu', ok: true, detail: cpu };
  // auto: engine.ts takes a real GPU adapter for models of WEBGPU_AUTO_MIN_PARAMS or more (its autoWebgpu).
  const { adapter, why } = await probeGpuAdapter({ needDriver: true });
  if (adapter && !adapter.fallback)
    return {
      requested,
      engine: 'webgpu',
      ok: true,
      adapter: adapterName(adapter),
      fallback: false,
      detail: `GPU adapter ${adapterName(adapter)} for models of ${WEBGPU_AUTO_MIN_PARAMS / 1e6}M parameters or more; smaller ones on the ${cpu}`,
    };
  return {
    requested,
    engine: 'cpu',
    ok: true,
    detail: `${cpu}; no GPU: ${adapter ? adapterName(adapter) : why}`,
  };
}
