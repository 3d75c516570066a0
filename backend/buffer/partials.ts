// Partial rollouts in the buffer (explorer.partial_rollout): a run's unfinished trajectories and the
// finished samples waiting for their group are rows with status `partial` (never trainable). They
// are written again, in the same transaction as the step's other experiences, through
// appendExperiences(..., { replacing }), so a killed explorer leaves the last stored prefix behind.
import type { Experience } from '../core/types.js';
import type { ExperienceStore } from './storage/types.js';

const PAGE = 10_000;

/** This run's `partial` training rows, oldest first. */
export async function pendingPartials(store: ExperienceStore, runId: string): Promise<Experience[]> {
  const out: Experience[] = [];
  for (;;) {
    const page = await store.list({
      runId,
      status: 'partial',
      split: 'train',
      sort: 'seq',
      offset: out.length,
      limit: PAGE,
    });
    out.push(...page);
    if (page.length < PAGE) return out;
  }
}
