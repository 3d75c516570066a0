// Runs a PyTorch CPU baseline script (Debian's python3-torch) and returns its JSON, or null with a reason.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export function torchPython(): string | null {
  for (const p of [process.env.RFT_TORCH_PYTHON, '/usr/bin/python3', 'python3']) {
    if (!p) continue;
    if (p.startsWith('/') && !existsSync(p)) continue;
    const r = spawnSync(p, ['-c', 'import torch'], { stdio: 'ignore' });
    if (r.status === 0) return p;
  }
  return null;
}

export function runTorch<T>(script: string, arg: unknown): { result: T | null; why?: string } {
  const py = torchPython();
  if (!py) return { result: null, why: 'PyTorch not found (apt-get install python3-torch libopenblas0-pthread)' };
  const r = spawnSync(py, [script, JSON.stringify(arg)], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) return { result: null, why: `torch baseline failed: ${r.stderr.slice(-500)}` };
  const line = r.stdout.trim().split('\n').pop()!;
  return { result: JSON.parse(line) as T };
}
