// "Reverse the word": the built-in task of the main job. Small enough for a model trained from
// scratch on a laptop CPU, algorithmic (so it generalises to held-out words), with a dense reward.
import { Rng } from '../../core/rng.js';
import type { Task } from '../../core/types.js';
import { inSplit, type BuiltinTaskset } from './builtin.js';

const LETTERS = 'abcdef';

export const reverseTaskset: BuiltinTaskset = {
  name: 'reverse',
  reward: 'exact_match',
  generate(size, seed, split) {
    const rng = new Rng(seed * 7919 + (split === 'eval' ? 1 : 0));
    const out: Task[] = [];
    const seen = new Set<string>();
    // 6 letters, lengths 2..4: 1,296 + 216 + 36 distinct words; eval takes 1 in 5 of them.
    for (let guard = 0; out.length < size && guard < size * 200; guard++) {
      const n = rng.int(2, 5);
      let w = '';
      for (let k = 0; k < n; k++) w += LETTERS[rng.int(0, LETTERS.length)];
      if (!inSplit(w, split)) continue;
      if (split === 'eval' && seen.has(w)) continue;
      seen.add(w);
      out.push({
        id: `reverse-${split}-${out.length}`,
        taskset: 'builtin:reverse',
        domain: 'text',
        prompt: `rev ${w}`,
        answer: [...w].reverse().join(''),
        difficulty: (n - 2) / 2,
        metadata: { partial_credit: true },
      });
    }
    return out;
  },
  solve: (t) => t.answer ?? '',
};
