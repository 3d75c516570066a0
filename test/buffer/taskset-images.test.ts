// Image columns of a dataset (the hub's `{bytes, path}` struct) as vision tasks: PNGs written by an
// independent encoder (ImageMagick's convert: RGB, palette, grey, RGBA), stored in Parquet by DuckDB,
// read back pixel for pixel; a JPEG or a path-only cell is refused at its row and column.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadTaskset, formatTaskError } from '../../backend/buffer/taskset/load.js';
import { decodePng } from '../../backend/buffer/taskset/png.js';
import { copyParquet, duck } from './columnar-fixtures.js';
import { tempDir } from './taskset-helpers.js';

const W = 5;
const H = 4;
// Few colours (a palette PNG stays exact), with alternating rows so the encoder uses several filters.
const rgb = Array.from({ length: W * H * 3 }, (_, i) => [0, 37, 200, 255][(i * 7 + (i >> 4)) % 4]!);

/** ImageMagick's command (`magick` 7, `convert-im6.q16` / `convert` 6), or undefined where it is not installed. */
const IM = ['magick', 'convert-im6.q16', 'convert'].find((c) => {
  try {
    return execFileSync(c, ['-version'], { encoding: 'utf8' }).includes('ImageMagick');
  } catch {
    return false;
  }
});

function png(dir: string, name: string, format: string, raw: number[], kind = 'rgb'): Buffer {
  const src = join(dir, `${name}.raw`);
  const out = join(dir, `${name}.png`);
  writeFileSync(src, Uint8Array.from(raw));
  execFileSync(IM!, ['-size', `${W}x${H}`, '-depth', '8', `${kind}:${src}`, `${format}:${out}`]);
  return readFileSync(out);
}

test('PNG cells (RGB, palette, grey, RGBA by ImageMagick) in Parquet become vision task images, pixel for pixel', async (t) => {
  if (!IM) {
    t.skip('ImageMagick is not installed (apt-get install imagemagick): no independent PNG writer');
    return;
  }
  const dir = tempDir();
  const grey = rgb.filter((_, i) => i % 3 === 0);
  const rgba = Array.from({ length: W * H * 4 }, (_, i) => (i % 4 === 3 ? 128 : rgb[(i >> 2) * 3 + (i % 4)]!));
  const cells = {
    rgb: png(dir, 'rgb', 'PNG24', rgb),
    pal: png(dir, 'pal', 'PNG8', rgb),
    grey: png(dir, 'grey', 'PNG8', grey, 'gray'),
    rgba: png(dir, 'rgba', 'PNG32', rgba, 'rgba'),
  };
  // The encoder chose what it chose: check the colour types are the ones meant (IHDR byte 25).
  assert.deepEqual(
    Object.values(cells).map((b) => b[25]),
    [2, 3, 0, 6].map((c, i) => (i === 2 && cells.grey[25] === 3 ? 3 : c)),
  );
  assert.deepEqual(decodePng(cells.rgb), { width: W, height: H, rgb });
  assert.deepEqual(decodePng(cells.pal).rgb, rgb);
  assert.deepEqual(
    decodePng(cells.grey).rgb,
    grey.flatMap((g) => [g, g, g]),
  );
  assert.deepEqual(decodePng(cells.rgba).rgb, rgb);

  const jpeg = join(dir, 'x.jpg');
  execFileSync(IM, ['-size', `${W}x${H}`, 'xc:red', jpeg]);
  const hex = (b: Buffer) => `from_hex('${b.toString('hex')}')`;
  const f = join(dir, 'vision.parquet');
  const rows = [
    `SELECT 'a' AS id, 'Which colour?' AS question, 'red' AS answer, {'bytes': ${hex(cells.rgb)}, 'path': 'a.png'} AS image`,
    `SELECT 'b', 'Which colour?', 'red', {'bytes': ${hex(cells.pal)}, 'path': 'b.png'}`,
    `SELECT 'c', 'Which colour?', 'red', {'bytes': ${hex(readFileSync(jpeg))}, 'path': 'c.jpg'}`,
    `SELECT 'd', 'Which colour?', 'red', {'bytes': NULL, 'path': 'd.png'}`,
  ].join(' UNION ALL ');
  await duck(copyParquet(`SELECT * FROM (${rows}) ORDER BY id`, f, 'zstd'));
  const r = await loadTaskset(f, { domain: 'vision', fields: { prompt_key: 'question' } });
  assert.deepEqual(
    r.tasks.map((x) => [x.id, x.image?.width, x.image?.height, x.image?.rgb.join()]),
    [
      ['a', W, H, rgb.join()],
      ['b', W, H, rgb.join()],
    ],
  );
  assert.deepEqual(r.errors.map(formatTaskError), [
    `${f}:3: field 'image': a JPEG image: only PNG is decoded`,
    `${f}:4: field 'image': an image given by path only (d.png): the row must hold its bytes`,
  ]);
});
