// Images -> patch rows for the vision prefix: an RGB image (row-major bytes) is cut into
// patchSize x patchSize tiles, left to right, top to bottom; each tile is flattened (row, column,
// channel) and scaled to 0..1. Transformer.embedPatches turns these rows into prefix embeddings.
// Shared by the explorer (generation) and the trainer (re-computing log-probs with the prefix).
import type { TaskImage } from '../core/types.js';
import { tf } from './engine.js';

export function patchCount(img: { width: number; height: number }, patchSize: number): number {
  return Math.ceil(img.height / patchSize) * Math.ceil(img.width / patchSize);
}

/** [P, patchSize * patchSize * 3] floats; edge tiles are zero-padded. */
export function patchify(img: TaskImage, patchSize: number): Float32Array {
  const { width: W, height: H, rgb } = img;
  if (rgb.length !== W * H * 3) throw new Error(`image: ${rgb.length} values, expected ${W}x${H}x3 = ${W * H * 3}`);
  const pw = Math.ceil(W / patchSize);
  const ph = Math.ceil(H / patchSize);
  const dim = patchSize * patchSize * 3;
  const out = new Float32Array(pw * ph * dim);
  for (let py = 0; py < ph; py++) {
    for (let px = 0; px < pw; px++) {
      const base = (py * pw + px) * dim;
      for (let y = 0; y < patchSize; y++) {
        for (let x = 0; x < patchSize; x++) {
          const iy = py * patchSize + y;
          const ix = px * patchSize + x;
          if (iy >= H || ix >= W) continue;
          for (let c = 0; c < 3; c++) out[base + (y * patchSize + x) * 3 + c] = rgb[(iy * W + ix) * 3 + c]! / 255;
        }
      }
    }
  }
  return out;
}

/** Patch rows of same-sized images as [B, P, patchDim]; the caller disposes it. */
export function patchTensor(images: TaskImage[], patchSize: number): tf.Tensor3D {
  if (images.length === 0) throw new Error('patchTensor: no images');
  const P = patchCount(images[0]!, patchSize);
  for (const im of images)
    if (patchCount(im, patchSize) !== P)
      throw new Error('patchTensor: images of one batch must have the same number of patches');
  const dim = patchSize * patchSize * 3;
  const data = new Float32Array(images.length * P * dim);
  images.forEach((im, b) => data.set(patchify(im, patchSize), b * P * dim));
  return tf.tensor3d(data, [images.length, P, dim]);
}
