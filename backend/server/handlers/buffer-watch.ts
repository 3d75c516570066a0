// Live buffer counts: runs append to their buffers from other processes (and other machines with
// PostgreSQL), which the server learns of only by looking. Every open buffer's counts are read
// once per interval and pushed as `buffer/changed` when they differ (the sidebar, the browser).
import type { BufferCounts } from '../../core/protocol.js';
import type { RpcHost } from '../rpc.js';
import type { BufferSessions } from '../sessions.js';
import type { Disposable } from '../ports.js';

export const COUNTS_POLL_MS = 1500;

export function watchBufferCounts(rpc: RpcHost, sessions: BufferSessions, ms = COUNTS_POLL_MS): Disposable {
  const last = new Map<string, string>();
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      for (const s of await sessions.opened()) {
        let counts: BufferCounts;
        try {
          counts = await s.buffer.counts();
        } catch {
          continue; // closed or mid-migration: next tick
        }
        const key = JSON.stringify(counts);
        const prev = last.get(s.buffer.path);
        last.set(s.buffer.path, key);
        if (prev !== undefined && prev !== key) rpc.notify('buffer/changed', { path: s.buffer.path, counts });
      }
    } finally {
      busy = false;
    }
  }, ms);
  timer.unref?.();
  return { dispose: () => clearInterval(timer) };
}
