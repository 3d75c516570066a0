// Repeat detection: a sample that has fallen into a loop (the same n-gram over and over) is stopped
// where the loop became certain, so degenerate outputs neither cost reward-model time nor get
// trained on at full length. `repeatStopAt` is the streaming test (is the tail of these tokens a
// loop?) and `cutRepeats` finds the first step where that test fires.

export interface RepeatOptions {
  /** Longest repeating unit looked for, in tokens. */
  maxPeriod: number;
  /** Fewest back-to-back copies of the unit that count as a loop. */
  minRepeats: number;
  /** Fewest tokens the copies must cover (so "aaaa" in a short answer is not a loop). */
  minSpan: number;
}

export const DEFAULT_REPEAT: RepeatOptions = { maxPeriod: 16, minRepeats: 4, minSpan: 24 };

/** The unit length p when the last tokens are >= minRepeats copies of a p-token unit spanning >= minSpan; else 0. */
export function repeatingTail(tokens: ArrayLike<number>, end: number, o: RepeatOptions = DEFAULT_REPEAT): number {
  for (let p = 1; p <= o.maxPeriod; p++) {
    const span = Math.max(p * o.minRepeats, Math.ceil(o.minSpan / p) * p);
    if (span > end) continue;
    let periodic = true;
    for (let i = end - span + p; i < end; i++) {
      if (tokens[i] !== tokens[i - p]) {
        periodic = false;
        break;
      }
    }
    if (periodic) return p;
  }
  return 0;
}

/** Index to cut at (exclusive): the first length at which the tail is a loop; -1 when there is none. */
export function repeatStopAt(tokens: ArrayLike<number>, o: RepeatOptions = DEFAULT_REPEAT): number {
  const minEnd = Math.min(o.minSpan, o.minRepeats);
  for (let end = minEnd; end <= tokens.length; end++) if (repeatingTail(tokens, end, o) > 0) return end;
  return -1;
}

export interface CutSample {
  tokens: number[];
  logprobs: number[];
  finishReason: string;
}

/** Cut a sample at its first loop; marks it `repeat`. Returns whether it was cut. */
export function cutRepeats<T extends CutSample>(g: T, o: RepeatOptions = DEFAULT_REPEAT): boolean {
  const at = repeatStopAt(g.tokens, o);
  if (at < 0) return false;
  g.tokens = g.tokens.slice(0, at);
  g.logprobs = g.logprobs.slice(0, at);
  g.finishReason = 'repeat';
  return true;
}
