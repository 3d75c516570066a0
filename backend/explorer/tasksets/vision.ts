// "vision": 16x16 RGB images of coloured shapes on a black background, with a question about the
// colour, the shape or the number of shapes. The model sees the image as a prefix of patch
// embeddings (vision workflow). Scored by k12 (normalised text / number matching).
import type { Rng } from '../../core/rng.js';
import type { TaskImage } from '../../core/types.js';
import type { BuiltinTaskset } from './builtin.js';
import { answerTag, sampleSplit } from './sample.js';

export const IMAGE_SIZE = 16;
const COLOURS: Record<string, [number, number, number]> = {
  red: [220, 30, 30],
  green: [30, 200, 60],
  blue: [40, 70, 230],
  yellow: [230, 220, 40],
};
const SHAPES = ['square', 'cross', 'line'] as const;
type Shape = (typeof SHAPES)[number];

/** Pixels of a 4x4 shape at (x, y). */
function cells(shape: Shape): [number, number][] {
  const out: [number, number][] = [];
  for (let y = 0; y < 4; y++)
    for (let x = 0; x < 4; x++) {
      if (shape === 'square' && (x === 0 || y === 0 || x === 3 || y === 3)) out.push([x, y]);
      if (shape === 'cross' && (x === y || x === 3 - y)) out.push([x, y]);
      if (shape === 'line' && y === 1) out.push([x, y]);
    }
  return out;
}

export function drawImage(items: { shape: Shape; colour: string; x: number; y: number }[]): TaskImage {
  const rgb = new Array<number>(IMAGE_SIZE * IMAGE_SIZE * 3).fill(0);
  for (const it of items) {
    const c = COLOURS[it.colour]!;
    for (const [dx, dy] of cells(it.shape)) {
      const i = ((it.y + dy) * IMAGE_SIZE + it.x + dx) * 3;
      rgb[i] = c[0];
      rgb[i + 1] = c[1];
      rgb[i + 2] = c[2];
    }
  }
  return { width: IMAGE_SIZE, height: IMAGE_SIZE, rgb };
}

function scene(rng: Rng) {
  const n = rng.int(1, 5);
  const shape = rng.pick(SHAPES);
  const colour = rng.pick(Object.keys(COLOURS));
  // Shapes sit on distinct cells of a 4x4 grid of 4x4 tiles, so they never overlap.
  const slots = rng.shuffle([...Array(16).keys()]).slice(0, n);
  return {
    n,
    shape,
    colour,
    items: slots.map((s) => ({ shape, colour, x: (s % 4) * 4, y: Math.floor(s / 4) * 4 })),
    slots,
  };
}

export const visionTaskset: BuiltinTaskset = {
  name: 'vision',
  reward: 'k12',
  generate(size, seed, split) {
    return sampleSplit('vision', size, seed, split, (rng) => {
      const s = scene(rng);
      const q = rng.int(0, 3);
      const [question, answer] =
        q === 0
          ? ['What colour are the shapes?', s.colour]
          : q === 1
            ? ['What shape is drawn?', s.shape]
            : ['How many shapes are there?', String(s.n)];
      return {
        key: `${question}|${s.shape}|${s.colour}|${[...s.slots].sort((a, b) => a - b).join(',')}`,
        task: {
          taskset: 'builtin:vision',
          domain: 'vision',
          prompt: `${question} Put the answer in <answer></answer>.`,
          answer,
          image: drawImage(s.items),
          difficulty: q / 2,
        },
      };
    });
  },
  solve: (t) => answerTag(t.answer ?? ''),
};
