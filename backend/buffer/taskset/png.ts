// Image cells of a dataset (the hub's image struct `{bytes, path}`) as a vision task's image
// ({width, height, rgb}): PNG is decoded here (node's zlib, the five row filters; 8-bit grey, grey +
// alpha, RGB, RGBA and palette, not interlaced; alpha dropped). Other encodings (JPEG) are refused
// with their name, for the caller to report at the row and column.
import { inflateSync } from 'node:zlib';
import type { TaskImage } from '../../core/types.js';

const SIG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

export function decodePng(bytes: Uint8Array): TaskImage {
  if (bytes.length < 8 || SIG.some((b, i) => bytes[i] !== b))
    throw new Error(bytes[0] === 0xff && bytes[1] === 0xd8 ? 'a JPEG image: only PNG is decoded' : 'not a PNG image');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let width = 0;
  let height = 0;
  let type = 0;
  let palette: Uint8Array | undefined;
  const idat: Uint8Array[] = [];
  for (let at = 8; at + 8 <= bytes.length; ) {
    const len = view.getUint32(at);
    const kind = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    const data = bytes.subarray(at + 8, at + 8 + len);
    if (kind === 'IHDR') {
      width = view.getUint32(at + 8);
      height = view.getUint32(at + 12);
      const depth = data[8]!;
      type = data[9]!;
      if (depth !== 8 || !(type in CHANNELS))
        throw new Error(`PNG of bit depth ${depth}, colour type ${type}: not decoded`);
      if (data[12] !== 0) throw new Error('an interlaced PNG: not decoded');
    } else if (kind === 'PLTE') palette = data;
    else if (kind === 'IDAT') idat.push(data);
    else if (kind === 'IEND') break;
    at += 12 + len;
  }
  if (!width || !height) throw new Error('a PNG without its header');
  const ch = CHANNELS[type]!;
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * ch;
  if (raw.length < height * (stride + 1)) throw new Error('a PNG cut short');
  const px = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)]!;
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= ch ? px[row + x - ch]! : 0;
      const b = y ? px[row - stride + x]! : 0;
      const c = x >= ch && y ? px[row - stride + x - ch]! : 0;
      const v = src[x]!;
      px[row + x] =
        (f === 0 ? v : f === 1 ? v + a : f === 2 ? v + b : f === 3 ? v + ((a + b) >> 1) : v + paeth(a, b, c)) & 255;
    }
  }
  const rgb: number[] = new Array(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    const p = i * ch;
    let r: number;
    let g: number;
    let b: number;
    if (type === 3) {
      const k = px[p]! * 3;
      if (!palette || k + 2 >= palette.length) throw new Error('a palette PNG index outside its palette');
      [r, g, b] = [palette[k]!, palette[k + 1]!, palette[k + 2]!];
    } else if (ch <= 2) r = g = b = px[p]!;
    else [r, g, b] = [px[p]!, px[p + 1]!, px[p + 2]!];
    rgb[i * 3] = r;
    rgb[i * 3 + 1] = g;
    rgb[i * 3 + 2] = b;
  }
  return { width, height, rgb };
}

/** An image cell (`{bytes, path}` or bare bytes) as a task image, or undefined when the value is no image cell. */
export function imageCell(v: unknown): TaskImage | undefined {
  const bytes = v instanceof Uint8Array ? v : v && typeof v === 'object' ? (v as { bytes?: unknown }).bytes : undefined;
  if (bytes instanceof Uint8Array) return decodePng(bytes);
  if (
    v &&
    typeof v === 'object' &&
    !(v instanceof Uint8Array) &&
    'path' in v &&
    (v as { bytes?: unknown }).bytes == null
  )
    throw new Error(
      `an image given by path only (${String((v as { path: unknown }).path)}): the row must hold its bytes`,
    );
  return undefined;
}
