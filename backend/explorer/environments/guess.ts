// "guess": a number-guessing game. The task holds a secret in [1, hi]; each turn the model guesses
// and the environment answers "higher", "lower" or "correct". Reward 1 for finding it, minus 0.1
// for each extra guess (at least 0.1); 0 if the turns run out. A turn without a number is answered
// with a reminder and costs a turn.
import type { Task } from '../../core/types.js';
import type { EnvSession, EnvStep, Environment } from './registry.js';

export const guessEnvironment: Environment = {
  name: 'guess',
  create(task: Task): EnvSession {
    const secret = Number(task.metadata?.secret);
    const hi = Number(task.metadata?.hi ?? 16);
    const maxTurns = Number(task.metadata?.maxTurns ?? 6);
    if (!Number.isInteger(secret) || secret < 1 || secret > hi)
      throw new Error(`guess: task ${task.id} needs metadata.secret, an integer in 1..${hi}`);
    let turns = 0;
    return {
      step(action: string): EnvStep {
        turns++;
        const m = /-?\d+/.exec(action);
        const last = turns >= maxTurns;
        if (!m)
          return {
            observation: last ? undefined : `Say a number from 1 to ${hi}.`,
            reward: 0,
            done: last,
            info: { turns, valid: false },
          };
        const g = Number(m[0]);
        if (g === secret)
          return { reward: Math.max(0.1, 1 - 0.1 * (turns - 1)), done: true, info: { turns, solved: true } };
        return {
          observation: last ? undefined : g < secret ? 'higher' : 'lower',
          reward: 0,
          done: last,
          info: { turns, solved: false },
        };
      },
    };
  },
};
