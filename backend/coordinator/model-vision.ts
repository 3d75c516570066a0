// The vision input of a run's model: from `model.vision` in the config, or (workflow `vision`)
// derived from the tasks' images, and checked against the tasks so an image the model cannot take
// fails at the start of the run with the config field to change, not deep inside a forward pass.
import type { RunConfig } from '../core/config.js';
import type { Task } from '../core/types.js';
import { InputError } from '../core/errors.js';
import type { ModelConfig } from '../model/config.js';
import { patchCount } from '../model/patchify.js';

/** Most patches any task's image needs at this patch size (0 when no task has an image). */
export function maxPatchesOf(tasks: Task[], patchSize: number): number {
  let most = 0;
  for (const t of tasks) if (t.image) most = Math.max(most, patchCount(t.image, patchSize));
  return most;
}

/** Vision config of a fresh model for this run, or undefined when the run has no image input. */
export function runVisionConfig(cfg: RunConfig, tasks: Task[]): ModelConfig['vision'] {
  const wanted = cfg.model.vision ?? (cfg.workflow.name === 'vision' ? { patch_size: 4 } : undefined);
  if (!wanted) return undefined;
  const needed = maxPatchesOf(tasks, wanted.patch_size);
  const maxPatches = wanted.max_patches ?? needed;
  if (maxPatches <= 0)
    throw new InputError(
      `model.vision: none of the run's tasks has an image, so the number of patches cannot be derived: give model.vision.max_patches`,
      { field: 'model.vision.max_patches' },
    );
  if (needed > maxPatches)
    throw new InputError(
      `model.vision.max_patches is ${maxPatches}, but an image of the taskset needs ${needed} patches of ${wanted.patch_size}x${wanted.patch_size}`,
      { field: 'model.vision.max_patches' },
    );
  return { patchSize: wanted.patch_size, channels: 3, maxPatches };
}

/** A loaded model (checkpoint) must take the run's images when the workflow is `vision`. */
export function checkModelTakesImages(cfg: RunConfig, model: ModelConfig, tasks: Task[], source: string): void {
  if (cfg.workflow.name !== 'vision') return;
  if (!model.vision)
    throw new InputError(
      `${source} has no vision input (config.vision) but the workflow is 'vision': start from a vision checkpoint or a fresh model`,
      { field: 'model.checkpoint' },
    );
  const needed = maxPatchesOf(tasks, model.vision.patchSize);
  if (needed > model.vision.maxPatches)
    throw new InputError(
      `${source} takes at most ${model.vision.maxPatches} image patches, the taskset's images need ${needed}`,
      { field: 'model.checkpoint' },
    );
}
