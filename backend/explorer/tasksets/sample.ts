// Shared loop of the seeded generators: draw candidates until `size` tasks of the wanted split are
// found. The split is decided by a hash of the candidate's key (its prompt), so train and eval
// never share a prompt whatever the seeds; eval additionally never repeats a prompt.
import { Rng } from '../../core/rng.js';
import type { Task } from '../../core/types.js';
import { inSplit } from './builtin.js';

export interface Candidate {
  key: string;
  task: Omit<Task, 'id'>;
}

export function sampleSplit(
  name: string,
  size: number,
  seed: number,
  split: 'train' | 'eval',
  draw: (rng: Rng) => Candidate,
): Task[] {
  const rng = new Rng(seed * 7919 + (split === 'eval' ? 1 : 0) + name.length * 104729);
  const out: Task[] = [];
  const seen = new Set<string>();
  for (let guard = 0; out.length < size && guard < size * 200 + 1000; guard++) {
    const c = draw(rng);
    if (!inSplit(`${name}:${c.key}`, split)) continue;
    if (split === 'eval' && seen.has(c.key)) continue;
    seen.add(c.key);
    out.push({ id: `${name}-${split}-${out.length}`, ...c.task });
  }
  return out;
}

/** `<answer>X</answer>`: the format the math, countdown and K-12 rewards read first. */
export function answerTag(x: string): string {
  return `<answer>${x}</answer>`;
}
