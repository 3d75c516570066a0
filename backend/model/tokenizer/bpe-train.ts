// Learns byte-level BPE merges from text, the way Hugging Face's BpeTrainer does: count pre-token
// words once, keep a count per adjacent pair and the words it occurs in, and after each merge touch
// only those words. The most frequent pair goes next; ties go to the smaller (left id, right id),
// so the result is deterministic.
import { SPECIAL_NAMES } from './base.js';
import { BYTE_LEVEL_PATTERN, bytesToByteLevel, utf8 } from './bytes.js';
import { BpeTokenizer, MAX_VOCAB, PAIR_SPACE, pairKey } from './bpe.js';
import { SPECIAL_TOKENS } from './types.js';

export interface BpeTrainOptions {
  /** Total vocabulary size: 8 special + 256 byte tokens + merges. */
  vocabSize: number;
  /** Pairs seen fewer times are not merged (training may stop below vocabSize); default 2. */
  minFrequency?: number;
}

export const BPE_BASE_SIZE = SPECIAL_NAMES.length + 256;

export function trainBpe(texts: Iterable<string>, opts: BpeTrainOptions): BpeTokenizer {
  const { vocabSize } = opts;
  const minFrequency = Math.max(1, opts.minFrequency ?? 2);
  if (!Number.isInteger(vocabSize) || vocabSize < BPE_BASE_SIZE || vocabSize > MAX_VOCAB) {
    throw new Error(
      `vocabSize must be an integer in ${BPE_BASE_SIZE}..${MAX_VOCAB} (8 special + 256 byte tokens + merges), got ${vocabSize}`,
    );
  }

  // Vocabulary: specials, then every byte in byte order.
  const tokens: string[] = SPECIAL_NAMES.map((n) => SPECIAL_TOKENS[n]);
  const specials = new Map(tokens.map((t, id) => [t, id]));
  const byteBase = tokens.length;
  for (let b = 0; b < 256; b++) tokens.push(bytesToByteLevel([b]));
  const idOf = new Map<string, number>();
  tokens.forEach((t, id) => {
    if (id >= byteBase) idOf.set(t, id);
  });

  // Distinct pre-token words with their counts.
  const wordCounts = new Map<string, number>();
  for (const text of texts) {
    const re = BYTE_LEVEL_PATTERN;
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) wordCounts.set(m[0], (wordCounts.get(m[0]) ?? 0) + 1);
  }
  const words: number[][] = [];
  const counts: number[] = [];
  for (const [w, c] of wordCounts) {
    const bytes = utf8(w);
    if (bytes.length < 2) continue; // a single byte holds no pair
    words.push(Array.from(bytes, (b) => byteBase + b));
    counts.push(c);
  }
  wordCounts.clear();

  // Pair counts and, per pair, the words it was ever seen in (checked again when used).
  const pairCount = new Map<number, number>();
  const pairWords = new Map<number, number[]>();
  const addWord = (key: number, w: number) => {
    const list = pairWords.get(key);
    if (list === undefined) pairWords.set(key, [w]);
    else if (list[list.length - 1] !== w) list.push(w);
  };
  for (let w = 0; w < words.length; w++) {
    const s = words[w]!;
    for (let i = 0; i + 1 < s.length; i++) {
      const key = pairKey(s[i]!, s[i + 1]!);
      pairCount.set(key, (pairCount.get(key) ?? 0) + counts[w]!);
      addWord(key, w);
    }
  }
  const heap = new PairHeap();
  for (const [key, c] of pairCount) heap.push(c, key);

  const merges: [number, number][] = [];
  const visited = new Int32Array(words.length).fill(-1);
  while (tokens.length < vocabSize && heap.size > 0) {
    const { count, key } = heap.pop();
    const actual = pairCount.get(key) ?? 0;
    if (actual !== count) {
      // Counts of old pairs only fall; re-file this one at its true count.
      if (actual > 0) heap.push(actual, key);
      continue;
    }
    if (count < minFrequency) break;
    const left = Math.floor(key / PAIR_SPACE);
    const right = key - left * PAIR_SPACE;
    const text = tokens[left]! + tokens[right]!;
    let merged = idOf.get(text);
    if (merged === undefined) {
      merged = tokens.length;
      tokens.push(text);
      idOf.set(text, merged);
    }
    const rank = merges.length;
    merges.push([left, right]);

    const grown = new Set<number>();
    const change = (a: number, b: number, delta: number, w: number) => {
      const k = pairKey(a, b);
      pairCount.set(k, (pairCount.get(k) ?? 0) + delta);
      if (delta > 0) {
        grown.add(k);
        addWord(k, w);
      }
    };
    for (const w of pairWords.get(key) ?? []) {
      if (visited[w] === rank) continue;
      visited[w] = rank;
      const s = words[w]!;
      const c = counts[w]!;
      const out: number[] = [];
      let changed = false;
      for (let i = 0; i < s.length; ) {
        if (i + 1 < s.length && s[i] === left && s[i + 1] === right) {
          changed = true;
          const before = out.length > 0 ? out[out.length - 1]! : -1;
          const after = i + 2 < s.length ? s[i + 2]! : -1;
          if (before >= 0) {
            change(before, left, -c, w);
            change(before, merged, c, w);
          }
          if (after >= 0) {
            change(right, after, -c, w);
            change(merged, after, c, w);
          }
          out.push(merged);
          i += 2;
        } else {
          out.push(s[i]!);
          i++;
        }
      }
      if (changed) {
        pairCount.set(key, (pairCount.get(key) ?? 0) - c * countPairs(s, left, right));
        words[w] = out;
      }
    }
    pairWords.delete(key);
    if ((pairCount.get(key) ?? 0) <= 0) pairCount.delete(key);
    for (const k of grown) {
      const c = pairCount.get(k) ?? 0;
      if (c > 0) heap.push(c, k);
    }
  }
  return new BpeTokenizer(tokens, specials, merges);
}

/** Non-overlapping left-to-right occurrences of (a, b) in s: the ones a merge pass replaces. */
function countPairs(s: number[], a: number, b: number): number {
  let n = 0;
  for (let i = 0; i + 1 < s.length; ) {
    if (s[i] === a && s[i + 1] === b) {
      n++;
      i += 2;
    } else i++;
  }
  return n;
}

/** Max-heap of (count, pair key): higher count first, then smaller key (smaller left, then right id). */
class PairHeap {
  private c: number[] = [];
  private k: number[] = [];
  get size(): number {
    return this.c.length;
  }
  private before(i: number, j: number): boolean {
    return this.c[i]! > this.c[j]! || (this.c[i] === this.c[j] && this.k[i]! < this.k[j]!);
  }
  private swap(i: number, j: number): void {
    const c = this.c[i]!;
    this.c[i] = this.c[j]!;
    this.c[j] = c;
    const k = this.k[i]!;
    this.k[i] = this.k[j]!;
    this.k[j] = k;
  }
  push(count: number, key: number): void {
    this.c.push(count);
    this.k.push(key);
    for (let i = this.c.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (!this.before(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }
  pop(): { count: number; key: number } {
    const top = { count: this.c[0]!, key: this.k[0]! };
    const lc = this.c.pop()!;
    const lk = this.k.pop()!;
    const n = this.c.length;
    if (n > 0) {
      this.c[0] = lc;
      this.k[0] = lk;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < n && this.before(l, m)) m = l;
        if (r < n && this.before(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
    return top;
  }
}
