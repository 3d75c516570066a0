// Choosing the next token from logits on the CPU side: temperature, top-k, top-p, seeded.
import type { Rng } from '../core/rng.js';

export interface SamplingParams {
  /** 0 means greedy. */
  temperature: number;
  /** 0 disables top-k. */
  topK: number;
  /** 1 disables nucleus sampling. */
  topP: number;
}

// The unnormalised probabilities of the last call: one buffer reused, since a fresh 49,152-entry
// Float64Array per sampled token (a rollout samples thousands) was a measurable share of a decode step.
let probsBuf = new Float64Array(0);
function scratch(V: number): Float64Array {
  if (probsBuf.length < V) probsBuf = new Float64Array(V);
  return probsBuf;
}

/**
 * Sample one token from `logits` (length V). Returns the token and its log-probability under the
 * temperature-scaled distribution before top-k / top-p truncation (the distribution the trainer
 * recomputes; greedy decoding reports the temperature-1 log-prob).
 */
export function sampleToken(logits: Float32Array, p: SamplingParams, rng: Rng): { token: number; logprob: number } {
  const V = logits.length;
  const t = p.temperature > 0 ? p.temperature : 1;
  let max = -Infinity;
  for (let i = 0; i < V; i++) {
    const z = logits[i]! / t;
    if (z > max) max = z;
  }
  let sum = 0;
  const probs = scratch(V);
  for (let i = 0; i < V; i++) {
    const e = Math.exp(logits[i]! / t - max);
    probs[i] = e;
    sum += e;
  }
  const logZ = Math.log(sum) + max;
  const lp = (i: number) => logits[i]! / t - logZ;
  if (p.temperature <= 0) {
    let best = 0;
    for (let i = 1; i < V; i++) if (logits[i]! > logits[best]!) best = i;
    return { token: best, logprob: lp(best) };
  }
  let candidates: number[] | undefined;
  if (p.topK > 0 && p.topK < V) {
    candidates = Array.from({ length: V }, (_, i) => i)
      .sort((a, b) => probs[b]! - probs[a]!)
      .slice(0, p.topK);
  }
  if (p.topP < 1) {
    const order = candidates ?? Array.from({ length: V }, (_, i) => i).sort((a, b) => probs[b]! - probs[a]!);
    const total = order.reduce((s, i) => s + probs[i]!, 0);
    const kept: number[] = [];
    let acc = 0;
    for (const i of order) {
      kept.push(i);
      acc += probs[i]!;
      if (acc >= p.topP * total) break;
    }
    candidates = kept;
  }
  const pool = candidates ?? null;
  const total = pool ? pool.reduce((s, i) => s + probs[i]!, 0) : sum;
  let u = rng.next() * total;
  if (pool) {
    for (const i of pool) {
      u -= probs[i]!;
      if (u <= 0) return { token: i, logprob: lp(i) };
    }
    const last = pool[pool.length - 1]!;
    return { token: last, logprob: lp(last) };
  }
  for (let i = 0; i < V; i++) {
    u -= probs[i]!;
    if (u <= 0) return { token: i, logprob: lp(i) };
  }
  return { token: V - 1, logprob: lp(V - 1) };
}
