// One group of the server's continuous batch: a native KV-cache decoder with a fixed number of
// row slots, every row at the decoder's shared position. A sequence joins a free row between steps:
// its prompt is prefilled on its own (a small decoder placed so the prompt ends at the group's
// position) and its keys and values copied into the row (NativeDecoder.adoptRow); rotary embeddings
// see only relative positions, so the row decodes as a lone decode of that prompt would. Each row
// samples with its own parameters and random stream and leaves the group when it ends; a step
// computes only up to the last live row, so free rows cost memory, not time.
import type { Rng } from '../../core/rng.js';
import { NativeDecoder, type DecodeThreads } from '../../model/native-decode.js';
import { sampleToken, type SamplingParams } from '../../model/sampling.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import type { Transformer } from '../../model/transformer.js';

/** A sampled token among the most likely at its position. */
export interface TopToken {
  id: number;
  logprob: number;
}

/** One sequence to decode (one choice of a request) and, as it runs, what it sampled. */
export interface BatchSeq {
  model: Transformer;
  tokenizer: Tokenizer;
  prompt: number[];
  /** Most tokens to sample. */
  maxNew: number;
  params: SamplingParams;
  rng: Rng;
  stopTokens: Set<number>;
  stopStrings: string[];
  /** Most likely tokens to report at each position (0: none). */
  topLogprobs: number;
  /** True once the sequence's client went away: its row is freed at the next step. */
  cancelled(): boolean;
  /** After each sampled token (streaming reads tokens / logprobs / top here). */
  onToken?(): void;
  /** Once the sequence ended (finishReason set) or failed. */
  settle(err?: Error): void;
  tokens: number[];
  logprobs: number[];
  top: TopToken[][];
  finishReason?: 'stop' | 'length' | 'cancelled';
}

/** The K most likely tokens of LOGITS, log-probs under TEMPERATURE (0: as 1), most likely first. */
export function topTokens(logits: Float32Array, k: number, temperature: number): TopToken[] {
  const t = temperature > 0 ? temperature : 1;
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i]! > max) max = logits[i]!;
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp((logits[i]! - max) / t);
  const logZ = Math.log(sum) + max / t;
  // The K best so far, most likely first (K is at most 20).
  const best: number[] = [];
  for (let i = 0; i < logits.length; i++) {
    const x = logits[i]!;
    if (best.length === k) {
      if (x <= logits[best[k - 1]!]!) continue;
      best.pop();
    }
    let at = best.length;
    best.push(i);
    while (at > 0 && logits[best[at - 1]!]! < x) {
      best[at] = best[at - 1]!;
      at--;
    }
    best[at] = i;
  }
  return best.map((id) => ({ id, logprob: logits[id]! / t - logZ }));
}

export class BatchGroup {
  private readonly decoder: NativeDecoder;
  private readonly rows: (BatchSeq | undefined)[];
  private readonly next: Int32Array;
  private readonly pending: BatchSeq[] = [];

  /** A group of SLOTS rows whose first joiners' prompts end at START, with room up to CAPACITY positions. */
  constructor(
    readonly model: Transformer,
    private readonly tok: Tokenizer,
    slots: number,
    start: number,
    capacity: number,
    private readonly threads: DecodeThreads,
  ) {
    // An empty column at START - 1 puts the decoder at START; joiners replace each row's mask.
    const batch = { ids: new Int32Array(slots).fill(tok.padId), mask: new Float32Array(slots), B: slots, T: 1 };
    this.decoder = new NativeDecoder(model, { ...batch, start: start - 1 }, capacity - start, threads);
    this.decoder.setActiveRows(1);
    this.decoder.prefill();
    this.rows = new Array<BatchSeq | undefined>(slots).fill(undefined);
    this.next = new Int32Array(slots).fill(tok.padId);
  }

  get live(): number {
    return this.rows.filter(Boolean).length;
  }

  get slots(): number {
    return this.rows.length;
  }

  /** Reserves a row for SEQ at the next join when it fits: a free row, its prompt before the position, its tokens within the room. */
  reserve(seq: BatchSeq): boolean {
    const pos = this.decoder.position;
    if (seq.model !== this.model || this.live + this.pending.length >= this.rows.length) return false;
    if (seq.prompt.length > pos || pos + seq.maxNew - 1 > this.decoder.capacity) return false;
    this.pending.push(seq);
    return true;
  }

  /** Prefills the reserved sequences together and gives each a row; samples their first tokens. Returns how many joined. */
  join(): number {
    const seqs = this.pending.splice(0);
    if (!seqs.length) return 0;
    const pos = this.decoder.position;
    const T = Math.max(...seqs.map((s) => s.prompt.length));
    const B = seqs.length;
    const ids = new Int32Array(B * T).fill(this.tok.padId);
    const mask = new Float32Array(B * T);
    seqs.forEach((s, b) => {
      const off = T - s.prompt.length;
      ids.set(s.prompt, b * T + off);
      mask.fill(1, b * T + off, (b + 1) * T);
    });
    const side = new NativeDecoder(this.model, { ids, mask, B, T, start: pos - T }, 0, this.threads);
    const logits = side.prefill();
    const V = this.model.config.vocabSize;
    seqs.forEach((s, b) => {
      const row = this.rows.indexOf(undefined);
      this.decoder.adoptRow(side, b, row);
      this.rows[row] = s;
      this.take(row, logits.subarray(b * V, (b + 1) * V));
    });
    return seqs.length;
  }

  /** One decode step of every live row (cancelled rows are freed first); returns how many were cancelled. */
  step(): number {
    let cancelled = 0;
    this.rows.forEach((s, r) => {
      if (s?.cancelled()) this.end(r, 'cancelled'), cancelled++;
    });
    if (!this.live) return cancelled;
    // Joiners take the lowest free row: the rows past the last live one are not computed.
    let hi = this.rows.length;
    while (!this.rows[hi - 1]) hi--;
    this.decoder.setActiveRows(hi);
    const logits = this.decoder.step(this.next);
    const V = this.model.config.vocabSize;
    for (let r = 0; r < hi; r++) if (this.rows[r]) this.take(r, logits.subarray(r * V, (r + 1) * V));
    return cancelled;
  }

  /** Whether a step can still run: room for the next position. */
  get full(): boolean {
    return this.decoder.position >= this.decoder.capacity;
  }

  /** Ends every sequence of the group with ERR (a decode failure). */
  fail(err: Error): void {
    for (const s of [...this.pending.splice(0), ...this.rows]) s?.settle(err);
    this.rows.fill(undefined);
  }

  private take(row: number, logits: Float32Array): void {
    const s = this.rows[row]!;
    const { token, logprob } = sampleToken(logits, s.params, s.rng);
    s.tokens.push(token);
    s.logprobs.push(logprob);
    if (s.topLogprobs > 0) s.top.push(topTokens(logits, s.topLogprobs, s.params.temperature));
    this.next[row] = token;
    let end: 'stop' | 'length' | undefined;
    if (s.stopTokens.has(token)) end = 'stop';
    else if (s.stopStrings.length) {
      const text = this.tok.decode(s.tokens, { skipSpecial: true });
      if (s.stopStrings.some((x) => text.includes(x))) end = 'stop';
    }
    if (!end && (s.tokens.length >= s.maxNew || this.decoder.position >= this.decoder.capacity)) end = 'length';
    s.onToken?.();
    if (end) this.end(row, end);
  }

  private end(row: number, why: 'stop' | 'length' | 'cancelled'): void {
    const s = this.rows[row]!;
    this.rows[row] = undefined;
    this.next[row] = this.tok.padId;
    s.finishReason = why;
    s.settle();
  }
}
