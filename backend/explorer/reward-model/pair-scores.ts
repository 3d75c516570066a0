// A reward model's scores of both answers of each preference pair.
import type { Transformer } from '../../model/transformer.js';
import type { PreferencePair } from './data.js';
import { scoreSequences } from './score.js';

export async function pairScores(
  model: Transformer,
  pairs: PreferencePair[],
  padId: number,
): Promise<{ chosen: number[]; rejected: number[] }> {
  const chosen = await scoreSequences(
    model,
    pairs.map((p) => [...p.prompt, ...p.chosen]),
    padId,
  );
  const rejected = await scoreSequences(
    model,
    pairs.map((p) => [...p.prompt, ...p.rejected]),
    padId,
  );
  return { chosen, rejected };
}
