// Built-in, seeded taskset generators: each makes tasks for a domain, a held-out eval split
// disjoint from the train split, and the expert solution of a task (for demonstrations).
import type { Task } from '../../core/types.js';

export interface BuiltinTaskset {
  name: string;
  /** The reward function (rewards registry name) that scores this taskset. */
  reward: string;
  /** Deterministic in (size, seed, split); eval and train never share a prompt. */
  generate(size: number, seed: number, split: 'train' | 'eval'): Task[];
  /** The reference response a demonstrator would write. */
  solve(task: Task): string;
}

/** Stable 32-bit hash of a string, used to assign prompts to splits. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Split membership by prompt hash: 1 in `evalEvery` prompts is eval-only. */
export function inSplit(key: string, split: 'train' | 'eval', evalEvery = 5): boolean {
  const isEval = hash32(key) % evalEvery === 0;
  return split === 'eval' ? isEval : !isEval;
}
