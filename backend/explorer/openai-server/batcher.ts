// Continuous batching of the server's requests: every sequence (a choice of a request) waits in one
// queue; between decode steps the queue's sequences join a running group with a free row (or start a
// new group), every group takes one step, and the event loop runs (HTTP reads, stream writes) before
// the next. So requests that arrive while a step runs join the next one, and each leaves when done.
import { headDim } from '../../model/config.js';
import { decodeThreadsFromEnv, nativeDecodeAvailable, type DecodeThreads } from '../../model/native-decode.js';
import type { Transformer } from '../../model/transformer.js';
import { BatchGroup, type BatchSeq } from './batch-group.js';

/** KV-cache bytes a new group may take; its window of positions shrinks to fit (never below its first rows' need). */
const GROUP_CACHE_BYTES = 1 << 30;

/** Whether the server can batch MODEL's requests (the native decode step: plain Llama weights, no adapters). */
export function batchable(model: Transformer | undefined): model is Transformer {
  return !!model && nativeDecodeAvailable(model);
}

export class DecodeBatcher {
  private queue: BatchSeq[] = [];
  private groups: BatchGroup[] = [];
  private running = false;
  /** Most rows a new group takes. */
  maxRows = 64;
  /** Counts since start: decode steps, rows those steps carried, the most rows live at once, sequences cancelled; recent streams (routes.ts). */
  readonly stats = {
    steps: 0,
    rowSteps: 0,
    peakLive: 0,
    cancelled: 0,
    /** Sequences that joined a group already decoding (continuous batching, not a fresh batch). */
    joinedRunning: 0,
    streams: [] as { firstChunkAtTokens: number | undefined; tokens: number }[],
  };

  constructor(private readonly threads: DecodeThreads = decodeThreadsFromEnv()) {}

  /** Sequences being decoded or waiting (for tests and metrics). */
  get load(): { queued: number; live: number; groups: number } {
    return { queued: this.queue.length, live: this.groups.reduce((n, g) => n + g.live, 0), groups: this.groups.length };
  }

  /** Decodes SEQS in the shared batch; resolves when every one ended (rejects on a decode failure). */
  run(seqs: BatchSeq[]): Promise<void> {
    const ends = seqs.map(
      (s) =>
        new Promise<void>((resolve, reject) => {
          const settle = s.settle;
          s.settle = (err) => {
            settle.call(s, err);
            if (err) reject(err);
            else resolve();
          };
        }),
    );
    this.queue.push(...seqs);
    if (!this.running) void this.loop();
    return Promise.all(ends).then(() => undefined);
  }

  private async loop(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length || this.groups.length) {
        this.admit();
        let live = 0;
        for (const g of this.groups) {
          try {
            const running = g.live > 0;
            const joined = g.join();
            if (running) this.stats.joinedRunning += joined;
            const rows = g.live;
            const cancelled = g.step();
            this.stats.cancelled += cancelled;
            this.stats.steps++;
            this.stats.rowSteps += rows - cancelled;
            live += rows - cancelled;
          } catch (e) {
            g.fail(e as Error);
          }
        }
        this.stats.peakLive = Math.max(this.stats.peakLive, live);
        this.groups = this.groups.filter((g) => g.live > 0 && !g.full);
        // Let HTTP reads and stream writes through: arrivals join at the next step.
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      this.running = false;
    }
  }

  /** Places each queued sequence: a cancelled one ends, others take a row of a group or start one. */
  private admit(): void {
    const waiting = this.queue.splice(0);
    for (let i = 0; i < waiting.length; i++) {
      const s = waiting[i]!;
      if (s.cancelled()) {
        this.stats.cancelled++;
        s.finishReason = 'cancelled';
        s.settle();
        continue;
      }
      // The fullest group with room first: the others drain and end.
      if (this.byLoad().some((g) => g.reserve(s))) continue;
      try {
        const g = this.newGroup(waiting.slice(i));
        this.groups.push(g);
        if (!g.reserve(s)) throw new Error('a new decode group cannot take its first sequence');
      } catch (e) {
        s.settle(e as Error);
      }
    }
  }

  private byLoad(): BatchGroup[] {
    return [...this.groups].sort((a, b) => b.live - a.live);
  }

  /** A group sized for the sequences still to place (REST, REST[0] first): rows, start position, window. */
  private newGroup(rest: BatchSeq[]): BatchGroup {
    const first = rest[0]!;
    const m = first.model;
    const same = rest.filter((s) => s.model === m && !s.cancelled());
    const maxSeq = m.config.maxSeqLen;
    let len = Math.max(...same.map((s) => s.prompt.length));
    let maxNew = Math.max(...same.map((s) => s.maxNew));
    if (len + maxNew - 1 > maxSeq) (len = first.prompt.length), (maxNew = first.maxNew);
    // Room for later prompts (twice this one) and later joiners (eight replies' worth), within the cache budget.
    const start = Math.max(len, Math.min(2 * len, maxSeq - maxNew + 1));
    const need = start + maxNew - 1;
    const c = m.config;
    const perRowPosition = c.nKvHeads * headDim(c) * 2 * c.nLayers * 4;
    // Free rows cost no step time (BatchGroup), only cache memory: as many as the budget holds at the
    // first rows' need, so later requests can join.
    const fit = Math.floor(GROUP_CACHE_BYTES / (need * perRowPosition));
    const rows = Math.max(same.length, Math.min(this.maxRows, fit));
    const budget = Math.floor(GROUP_CACHE_BYTES / (rows * perRowPosition));
    const capacity = Math.max(need, Math.min(maxSeq, start + 8 * maxNew, budget));
    return new BatchGroup(m, first.tokenizer, rows, start, capacity, this.threads);
  }
}
