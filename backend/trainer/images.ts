// Vision experiences carry their task's image in `metadata.image` (the vision workflow and expert
// demonstrations put it there): the trainer rebuilds the same patch-embedding prefix the explorer
// generated with, so its log-probs are those of the sequence the model actually saw.
import { InputError } from '../core/errors.js';
import type { Experience, TaskImage } from '../core/types.js';
import type { tf } from '../model/engine.js';
import { patchTensor } from '../model/patchify.js';
import type { Transformer } from '../model/transformer.js';

function imageOf(e: Experience): TaskImage | undefined {
  const im = e.metadata?.image as TaskImage | undefined;
  return im && typeof im === 'object' ? im : undefined;
}

/**
 * Patch rows [B, P, patchDim] of a micro-batch whose experiences carry images, or undefined when
 * none does. The caller disposes it, and builds it outside any gradient tape: the gradient of the
 * patch embedding reads these values after the forward scope has ended.
 */
export function batchPatches(model: Transformer, exps: Experience[]): tf.Tensor3D | undefined {
  const images = exps.map(imageOf);
  const withImage = images.filter((im) => im !== undefined).length;
  if (withImage === 0) return undefined;
  if (withImage !== exps.length) {
    const i = images.findIndex((im) => im === undefined);
    throw new InputError(
      `trainer: a micro-batch mixes experiences with and without images: experience ${exps[i]!.id} (task ${exps[i]!.taskId}) has no metadata.image`,
    );
  }
  const v = model.config.vision;
  if (!v)
    throw new InputError(
      `trainer: experience ${exps[0]!.id} carries an image but the model has no vision input (config.vision)`,
    );
  return patchTensor(images as TaskImage[], v.patchSize);
}
