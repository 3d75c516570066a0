// The code sandbox: a pool of isolated, reused worker processes (see pool.ts, isolation.ts).
// `sharedSandbox()` is the process-wide pool the code reward uses; its workers do not keep the
// process alive and are killed when it exits.
import { SandboxPool } from './pool.js';

export { SandboxPool } from './pool.js';
export { extractFunction } from './extract.js';
export { deepEqualResult } from './decode.js';
export * from './types.js';

let shared: SandboxPool | null = null;

export function sharedSandbox(): SandboxPool {
  if (!shared) shared = new SandboxPool();
  return shared;
}

export async function closeSharedSandbox(): Promise<void> {
  const s = shared;
  shared = null;
  await s?.close();
}
