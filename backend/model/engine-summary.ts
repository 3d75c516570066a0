// Which tensor engine the runs this process starts will use, without starting one (no tfjs here):
// for the editor's status bar (`server/engine`). RFT_BACKEND decides, as in engine.ts; for webgpu the
// adapter is probed (Dawn), for the CPU engine the native addon's status and OpenBLAS kernel family
// are read from vendor/rft-blas.status.json.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EngineSummary } from '../core/protocol.js';
import { packageRoot } from '../core/package-root.js';
import { adapterName, probeGpuAdapter } from './webgpu.js';

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
  return { requested, engine: 'cpu', ok: true, detail: `CPU: WebAssembly with ${blas}` };
}
