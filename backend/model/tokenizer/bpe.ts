// Byte-level BPE tokenizer (GPT-2 style): text is split by GPT-2's pattern, each piece becomes its
// UTF-8 bytes, and learned merges join adjacent tokens. Merging follows Hugging Face exactly: among
// the adjacent pairs that have a merge, the one with the lowest rank goes first, and on equal rank
// the leftmost (by its position in the original byte sequence), one merge at a time.
// Ids: the special tokens 0..7, the 256 single bytes 8..263 (in byte order), then one per merge.
import { TokenizerBase } from './base.js';
import { BYTE_LEVEL_PATTERN, bytesToByteLevel, byteLevelToBytes, utf8 } from './bytes.js';

/** Pair keys pack two ids into one number: left * PAIR_SPACE + right. */
export const PAIR_SPACE = 2 ** 21;
export const MAX_VOCAB = PAIR_SPACE;

export function pairKey(left: number, right: number): number {
  return left * PAIR_SPACE + right;
}

const CACHE_LIMIT = 50_000;

export class BpeTokenizer extends TokenizerBase {
  readonly kind = 'bpe' as const;
  /** Merges in rank order, as [left id, right id]. */
  readonly merges: readonly (readonly [number, number])[];
  private readonly byteIds: Int32Array;
  private readonly bytesById: Uint8Array[];
  private readonly rankOf = new Map<number, number>();
  private readonly mergedId: Int32Array;
  private cache = new Map<string, number[]>();

  /**
   * `tokens[id]`: the byte-level string of a token (GPT-2's printable byte chars) or a special
   * token's text. All 256 single-byte tokens must be present; every merge's result must be a token.
   */
  constructor(
    tokens: readonly string[],
    specials: ReadonlyMap<string, number>,
    merges: readonly (readonly [number, number])[],
  ) {
    super(tokens, specials);
    if (tokens.length > MAX_VOCAB)
      throw new Error(`vocabulary of ${tokens.length} tokens exceeds the maximum ${MAX_VOCAB}`);
    const idOf = new Map<string, number>();
    this.bytesById = tokens.map((t, id) => {
      if (this.isSpecial(id)) return utf8(t);
      const bytes = byteLevelToBytes(t);
      if (bytes === null || bytes.length === 0)
        throw new Error(`token ${id} ${JSON.stringify(t)} is not a byte-level string`);
      if (idOf.has(t)) throw new Error(`token ${JSON.stringify(t)} appears twice (ids ${idOf.get(t)} and ${id})`);
      idOf.set(t, id);
      return Uint8Array.from(bytes);
    });
    this.byteIds = new Int32Array(256);
    for (let b = 0; b < 256; b++) {
      const id = idOf.get(bytesToByteLevel([b]));
      if (id === undefined) throw new Error(`byte 0x${b.toString(16)} has no token`);
      this.byteIds[b] = id;
    }
    this.merges = merges;
    this.mergedId = new Int32Array(merges.length);
    merges.forEach(([l, r], rank) => {
      if (this.isSpecial(l) || this.isSpecial(r)) throw new Error(`merge ${rank} uses a special token`);
      const id = idOf.get(tokens[l]! + tokens[r]!);
      if (id === undefined)
        throw new Error(`merge ${rank} (${tokens[l]} ${tokens[r]}) makes a token not in the vocabulary`);
      const key = pairKey(l, r);
      // A pair listed twice takes its last rank, as Hugging Face's rank maps (built in order) do.
      this.rankOf.set(key, rank);
      this.mergedId[rank] = id;
    });
  }

  tokenBytes(id: number): Uint8Array {
    this.checkId(id);
    return this.bytesById[id]!;
  }

  protected encodeOrdinary(text: string, out: number[]): void {
    const re = BYTE_LEVEL_PATTERN;
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      const piece = m[0];
      let ids = this.cache.get(piece);
      if (ids === undefined) {
        ids = this.encodeWord(utf8(piece));
        if (this.cache.size >= CACHE_LIMIT) this.cache = new Map();
        this.cache.set(piece, ids);
      }
      for (const id of ids) out.push(id);
    }
  }

  /** BPE over one pre-token's bytes: a heap of candidate merges keyed by (rank, original position). */
  encodeWord(bytes: Uint8Array): number[] {
    const n = bytes.length;
    const sym = new Int32Array(n);
    for (let i = 0; i < n; i++) sym[i] = this.byteIds[bytes[i]!]!;
    if (n < 2 || this.merges.length === 0) return Array.from(sym);
    // Doubly linked list over positions; a merged symbol lives at its left position.
    const next = new Int32Array(n);
    const prev = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      next[i] = i + 1 < n ? i + 1 : -1;
      prev[i] = i - 1;
    }
    const heap = new MergeHeap();
    const consider = (pos: number) => {
      const nx = next[pos]!;
      if (nx < 0) return;
      const rank = this.rankOf.get(pairKey(sym[pos]!, sym[nx]!));
      if (rank !== undefined) heap.push(rank, pos);
    };
    for (let i = 0; i + 1 < n; i++) consider(i);
    const alive = new Uint8Array(n).fill(1);
    while (heap.size > 0) {
      const rank = heap.topRank();
      const pos = heap.pop();
      const nx = next[pos]!;
      // Stale entry: the left symbol is gone, or the pair at pos is no longer this merge.
      if (!alive[pos] || nx < 0 || this.rankOf.get(pairKey(sym[pos]!, sym[nx]!)) !== rank) continue;
      sym[pos] = this.mergedId[rank]!;
      alive[nx] = 0;
      const after = next[nx]!;
      next[pos] = after;
      if (after >= 0) prev[after] = pos;
      const before = prev[pos]!;
      if (before >= 0) consider(before);
      consider(pos);
    }
    const ids: number[] = [];
    for (let i = 0; i >= 0; i = next[i]!) ids.push(sym[i]!);
    return ids;
  }

  toJSON(): unknown {
    return {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: this.addedTokensJSON(),
      normalizer: null,
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      post_processor: null,
      decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab: this.vocabJSON(),
        // "left right" strings: byte-level tokens never hold a space, and every reader takes this form.
        merges: this.merges.map(([l, r]) => `${this.tokens[l]} ${this.tokens[r]}`),
      },
    };
  }
}

/** Min-heap of (rank, position) pairs, compared by rank then position. */
class MergeHeap {
  private ranks: number[] = [];
  private poss: number[] = [];
  get size(): number {
    return this.ranks.length;
  }
  topRank(): number {
    return this.ranks[0]!;
  }
  private less(i: number, j: number): boolean {
    const ri = this.ranks[i]!;
    const rj = this.ranks[j]!;
    return ri < rj || (ri === rj && this.poss[i]! < this.poss[j]!);
  }
  private swap(i: number, j: number): void {
    const r = this.ranks[i]!;
    this.ranks[i] = this.ranks[j]!;
    this.ranks[j] = r;
    const p = this.poss[i]!;
    this.poss[i] = this.poss[j]!;
    this.poss[j] = p;
  }
  push(rank: number, pos: number): void {
    this.ranks.push(rank);
    this.poss.push(pos);
    let i = this.ranks.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }
  /** Removes the top entry and returns its position. */
  pop(): number {
    const top = this.poss[0]!;
    const lastRank = this.ranks.pop()!;
    const lastPos = this.poss.pop()!;
    if (this.ranks.length > 0) {
      this.ranks[0] = lastRank;
      this.poss[0] = lastPos;
      let i = 0;
      const n = this.ranks.length;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < n && this.less(l, m)) m = l;
        if (r < n && this.less(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
    return top;
  }
}
