// Buffers opened by the server, keyed by canonical path, so that many requests share one open
// database; the "current" buffer is the one a request without a ref goes to.
import type { BufferRef } from '../core/protocol.js';
import type { BufferOpener, OpenBuffer } from './ports.js';
import { NotAvailableError, NotFoundError } from './errors.js';

export class BufferSessions {
  private readonly open_ = new Map<string, Promise<OpenBuffer>>();
  private current: BufferRef | undefined;

  constructor(
    private readonly opener: BufferOpener | undefined,
    defaultRef?: BufferRef,
  ) {
    this.current = defaultRef;
  }

  /** Open (or reuse) the buffer for `ref`; with `makeCurrent` later ref-less requests use it. */
  async open(ref: BufferRef | undefined, makeCurrent = false): Promise<OpenBuffer> {
    if (!this.opener) throw new NotAvailableError('the buffer');
    const r = ref && (ref.path || ref.runId) ? ref : this.current;
    if (!r) throw new NotFoundError('no buffer is open: call buffer/open with a run id or a path first');
    const key = await this.opener.resolve(r);
    let p = this.open_.get(key);
    if (!p) {
      p = this.opener.open(key);
      this.open_.set(key, p);
      p.catch(() => this.open_.delete(key));
    }
    const s = await p;
    if (makeCurrent) this.current = { path: key };
    return s;
  }

  /** The buffers opened so far (those that opened without error). */
  async opened(): Promise<OpenBuffer[]> {
    const all = await Promise.allSettled([...this.open_.values()]);
    return all.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  }

  async closeAll(): Promise<void> {
    const all = [...this.open_.values()];
    this.open_.clear();
    for (const p of all) await p.then((s) => s.buffer.close()).catch(() => undefined);
  }
}
