// Vision workflow: single-turn answers about an image. Each task's image becomes a prefix of patch
// embeddings (the rollout model's embedImages) placed before the prompt tokens. The image travels
// in the experience's metadata (`image`) so the trainer can rebuild the prefix and re-compute the
// log-probs (tokenLogprobs(model, ids, { prefix })).
import type { Task } from '../../core/types.js';
import type { Workflow } from '../workflow.js';
import { runSingleTurn } from './single_turn.js';

export const visionWorkflow: Workflow = {
  name: 'vision',
  async run(tasks: Task[], ctx) {
    const missing = tasks.find((t) => !t.image);
    if (missing) throw new Error(`vision: task ${missing.id} has no image`);
    if (!ctx.model.embedImages)
      throw new Error('vision: the rollout model takes no images (needs a local model with config.vision)');
    const images = tasks.flatMap((t) => Array.from({ length: ctx.repeatTimes }, () => t.image!));
    const prefix = ctx.model.embedImages(images);
    try {
      return await runSingleTurn(tasks, ctx, { prefix, metadata: (t) => ({ image: t.image }) });
    } finally {
      prefix.dispose();
    }
  },
};
