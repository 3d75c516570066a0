// Blocking reads: try to take a whole batch; while there is not enough, say why (empty buffer, all
// stale, not enough yet) and poll with backoff until the timeout.
import { SampleTimeoutError, type SampleRequest, type WaitStatus } from './types.js';
import type { Availability, TakeResult } from '../storage/types.js';

export function describeWait(sampler: string, needed: number, a: Availability, minVersion: number | null): WaitStatus {
  const reason = a.ready === 0 ? (a.stale > 0 ? 'all_stale' : 'empty') : 'not_enough';
  const staleText = a.stale ? `, ${a.stale} skipped as stale (model version < ${minVersion})` : '';
  const message =
    reason === 'empty'
      ? `waiting for ${needed} experiences: none available yet`
      : reason === 'all_stale'
        ? `waiting for ${needed} experiences: every available one is stale (${a.stale} with model version < ${minVersion})`
        : `waiting for ${needed} experiences: ${a.ready} ready${staleText}`;
  return { reason, sampler, needed, ready: a.ready, stale: a.stale, minVersion, message };
}

export async function blockingTake(
  req: SampleRequest,
  take: () => Promise<TakeResult>,
  status: () => Promise<WaitStatus>,
): Promise<TakeResult & { waitedMs: number }> {
  const start = performance.now();
  const timeout = req.timeoutMs ?? 60_000;
  let delay = 5;
  let last: string | null = null;
  for (;;) {
    // A stop that came during the wait takes no batch (rows another explorer stored meanwhile stay for a resume).
    if (req.signal?.aborted) throw req.signal.reason ?? new Error('sampling aborted');
    const r = await take();
    if (r.experiences.length) return { ...r, waitedMs: performance.now() - start };
    const st = await status();
    if (st.message !== last) {
      last = st.message;
      req.onWait?.(st);
    }
    const waited = performance.now() - start;
    if (waited >= timeout) throw new SampleTimeoutError(st, waited);
    if (req.signal?.aborted) throw req.signal.reason ?? new Error('sampling aborted');
    await new Promise((res) => setTimeout(res, Math.min(delay, timeout - waited)));
    delay = Math.min(delay * 2, 200);
  }
}

export function minVersionFor(current: number, maxStaleness: number | undefined): number | undefined {
  return maxStaleness === undefined || !Number.isFinite(maxStaleness) ? undefined : current - maxStaleness;
}
