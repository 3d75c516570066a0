// "guess": episodes of the number-guessing environment (multi_turn workflow). The reward comes
// from the environment, so the taskset names the `environment` reward (see reward-resolve.ts).
import type { BuiltinTaskset } from './builtin.js';
import { sampleSplit } from './sample.js';

export const guessTaskset: BuiltinTaskset = {
  name: 'guess',
  reward: 'environment',
  generate(size, seed, split) {
    return sampleSplit('guess', size, seed, split, (rng) => {
      const hi = rng.int(8, 65);
      const secret = rng.int(1, hi + 1);
      // The prompt only shows the range: an episode is the (range, secret) pair.
      return {
        key: `${hi}:${secret}`,
        task: {
          taskset: 'builtin:guess',
          domain: 'multiturn',
          prompt: `I picked a number from 1 to ${hi}. Guess it: answer with one number per turn.`,
          answer: String(secret),
          difficulty: Math.log2(hi) / 5,
          metadata: { environment: 'guess', secret, hi, maxTurns: 6 },
        },
      };
    });
  },
  // A binary search's first guess; the full expert episode is multi-turn.
  solve: (t) => String(Math.ceil(Number(t.metadata?.hi ?? 16) / 2)),
};
