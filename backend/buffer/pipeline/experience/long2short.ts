// Kimi k1.5's long2short data, per rollout group of one task:
// - shortest-rejection sampling: the shortest correct of the group's n samples is copied into the
//   buffer as expert (SFT) data, marked metadata.origin 'shortest_rejection' and metadata.from;
// - long2short DPO pairs: the shortest correct is chosen, every longer correct or any incorrect
//   sample rejected. The decision is recorded on the rejected experience (metadata.long2short =
//   {chosen}); backend/buffer/pairs.ts turns these marks into stored preference pairs.
// Correct samples as long as the shortest are neither chosen nor rejected (no preference between them).
import { z } from 'zod';
import type { Experience } from '../../../core/types.js';
import type { OperatorSpec } from '../task/operator-spec.js';
import { correctThreshold, generatedLength, isCorrect, rolloutGroups } from './correctness.js';
import type { ExperienceOperator, ExperiencePipelineDeps } from './types.js';

const params = z
  .object({
    /** Copy the shortest correct sample in as expert data. */
    expert: z.boolean().default(true),
    /** Mark (shortest correct, longer or incorrect) pairs. */
    pairs: z.boolean().default(true),
    /** Groups with fewer samples are skipped: with one sample there is nothing to choose from. */
    min_group: z.number().int().min(2).default(2),
    correct_threshold: correctThreshold,
  })
  .strict()
  .refine((p) => p.expert || p.pairs, { message: 'nothing to do: expert and pairs are both false' });
type Params = z.infer<typeof params>;

/** Metadata of a rejected experience marked by long2short. */
export interface Long2ShortMark {
  chosen: string;
}

/** Id of the expert copy of `e` (deterministic, so a retried batch is a duplicate, not a second copy). */
export const shortestExpertId = (e: Experience): string => `${e.id}~shortest`;

export const long2short: OperatorSpec<ExperienceOperator, ExperiencePipelineDeps> = {
  summary: 'shortest-rejection sampling (shortest correct -> expert) and long2short DPO pairs',
  params,
  create: (p: Params) => ({
    apply(exps, ctx) {
      const added: Experience[] = [];
      for (const g of rolloutGroups(exps)) {
        if (g.length < p.min_group) continue;
        const lens = g.map(generatedLength);
        const ok = g.map((e) => isCorrect(e, p.correct_threshold));
        let best = -1;
        g.forEach((_, i) => {
          if (ok[i] && (best < 0 || lens[i]! < lens[best]!)) best = i;
        });
        if (best < 0) continue;
        const c = g[best]!;
        if (p.expert) {
          const { advantages: _a, returns: _r, ...rest } = c;
          added.push({
            ...rest,
            id: shortestExpertId(c),
            source: 'expert',
            useCount: 0,
            metadata: { ...c.metadata, origin: 'shortest_rejection', from: c.id },
          });
          ctx.count('long2short:expert');
        }
        if (p.pairs) {
          g.forEach((e, i) => {
            if (i === best || (ok[i] && lens[i]! <= lens[best]!)) return;
            e.metadata = { ...e.metadata, long2short: { chosen: c.id } satisfies Long2ShortMark };
            ctx.count('long2short:pair');
          });
        }
      }
      return [...exps, ...added];
    },
  }),
};
