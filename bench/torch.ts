// Runs a PyTorch CPU baseline script (Debian's python3-torch) and returns its JSON, or null with a reason.
//
// Debian's torch does its matmuls through the system OpenBLAS, which on some CPUs detects a slow kernel
// family (an AVX-512 Xeon as Prescott under OpenBLAS 0.3.21). The engine loads its addon with the family
// the install's probe found best (backend/model/openblas-env.ts); the baseline gets the same family, so a
// ratio compares engines, not kernel families (issue 40 item 00). Each run says which family each side ran.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openblasLoadEnv, type InstallProbe } from '../backend/model/openblas-env.js';
import { packageRoot } from '../backend/core/package-root.js';

export function torchPython(): string | null {
  for (const p of [process.env.RFT_TORCH_PYTHON, '/usr/bin/python3', 'python3']) {
    if (!p) continue;
    if (p.startsWith('/') && !existsSync(p)) continue;
    const r = spawnSync(p, ['-c', 'import torch'], { stdio: 'ignore' });
    if (r.status === 0) return p;
  }
  return null;
}

function installProbe(): InstallProbe | undefined {
  try {
    return JSON.parse(readFileSync(join(packageRoot(), 'vendor', 'rft-blas.status.json'), 'utf8')) as InstallProbe;
  } catch {
    return undefined;
  }
}

/** The environment the baseline runs in: the user's, with the OpenBLAS family the engine loads with. */
export function torchEnv(env: NodeJS.ProcessEnv = process.env, probe = installProbe()): NodeJS.ProcessEnv {
  const { set } = openblasLoadEnv(env, probe);
  const out = { ...env };
  if (set.OPENBLAS_CORETYPE) out.OPENBLAS_CORETYPE = set.OPENBLAS_CORETYPE;
  return out;
}

// OpenBLAS's own answer, asked through the library torch loaded (the same handle once torch is imported).
const CORE_PY = `
import ctypes, ctypes.util, torch
name = None
for lib in ("libopenblas.so.0", ctypes.util.find_library("openblas")):
    if not lib: continue
    try:
        f = ctypes.CDLL(lib).openblas_get_corename
        f.restype = ctypes.c_char_p
        name = f().decode(); break
    except Exception: pass
print(name or "not OpenBLAS")
`;

let family: string | undefined;
/** The OpenBLAS kernel family the baseline's torch runs with ("not OpenBLAS" for another BLAS). */
export function torchBlasFamily(): string {
  if (family !== undefined) return family;
  const py = torchPython();
  if (!py) return (family = 'no PyTorch');
  const r = spawnSync(py, ['-c', CORE_PY], { encoding: 'utf8', env: torchEnv() });
  family = r.status === 0 ? r.stdout.trim().split('\n').pop()! : 'unknown';
  return family;
}

export function runTorch<T>(script: string, arg: unknown): { result: T | null; why?: string } {
  const py = torchPython();
  if (!py) return { result: null, why: 'PyTorch not found (apt-get install python3-torch libopenblas0-pthread)' };
  const r = spawnSync(py, [script, JSON.stringify(arg)], { encoding: 'utf8', maxBuffer: 1 << 24, env: torchEnv() });
  if (r.status !== 0) return { result: null, why: `torch baseline failed: ${r.stderr.slice(-500)}` };
  const line = r.stdout.trim().split('\n').pop()!;
  return { result: JSON.parse(line) as T };
}
