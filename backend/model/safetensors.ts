// The safetensors format: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the raw bytes.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { InputError } from '../core/errors.js';
import { openRegularFile } from '../core/regular-file.js';

export interface StoredTensor {
  dtype: 'F32' | 'F16' | 'BF16' | 'I32' | 'I64';
  shape: number[];
  /** Always float32 after reading (F16/BF16 widened, integers converted). */
  data: Float32Array;
}

const BYTES: Record<StoredTensor['dtype'], number> = { F32: 4, F16: 2, BF16: 2, I32: 4, I64: 8 };

export type WriteDtype = 'F32' | 'F16' | 'BF16';

export function writeSafetensors(
  tensors: Map<string, { shape: number[]; data: Float32Array }>,
  metadata: Record<string, string> = {},
  dtype: WriteDtype = 'F32',
): Buffer {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  const names = [...tensors.keys()].sort();
  const size = BYTES[dtype];
  for (const name of names) {
    const t = tensors.get(name)!;
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length)
      throw new Error(`tensor '${name}': shape [${t.shape}] holds ${n} values but data has ${t.data.length}`);
    header[name] = { dtype, shape: t.shape, data_offsets: [offset, offset + n * size] };
    offset += n * size;
  }
  let json = JSON.stringify(header);
  // Pad the header with spaces so the data starts 8-byte aligned, as the reference writer does.
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const hbytes = Buffer.from(json, 'utf8');
  const out = Buffer.alloc(8 + hbytes.length + offset);
  out.writeBigUInt64LE(BigInt(hbytes.length), 0);
  hbytes.copy(out, 8);
  let pos = 8 + hbytes.length;
  for (const name of names) {
    const t = tensors.get(name)!;
    if (dtype === 'F32') {
      Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).copy(out, pos);
      pos += t.data.byteLength;
    } else {
      const half = dtype === 'F16' ? floatToHalf : floatToBf16;
      for (let i = 0; i < t.data.length; i++, pos += 2) out.writeUInt16LE(half(t.data[i]!), pos);
    }
  }
  return out;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float32 -> bfloat16 bits, rounded to nearest even (as torch does). */
export function floatToBf16(x: number): number {
  f32[0] = x;
  const u = u32[0]!;
  if ((u & 0x7f800000) === 0x7f800000 && u & 0x7fffff) return 0x7fc0;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** float32 -> IEEE half bits, rounded to nearest even. */
export function floatToHalf(x: number): number {
  f32[0] = x;
  const u = u32[0]!;
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rem > halfway || (rem === halfway && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++;
  return sign | h;
}

export interface TensorEntry {
  name: string;
  dtype: StoredTensor['dtype'];
  shape: number[];
  file: string;
  /** Absolute byte offset of the data in the file, and its length. */
  at: number;
  bytes: number;
}

/**
 * Reads only the header of a safetensors file (8 bytes + JSON): tensor names, dtypes, shapes and
 * where their bytes lie, all checked against the file's size. No tensor data is read.
 */
export function readSafetensorsHeader(file: string): {
  entries: Map<string, TensorEntry>;
  metadata: Record<string, string>;
} {
  const fd = openRegularFile(file);
  try {
    const size = fstatSync(fd).size;
    if (size < 8)
      throw new InputError(`not a safetensors file: ${size} bytes, the header length alone needs 8`, { file });
    const lenBuf = Buffer.alloc(8);
    readSync(fd, lenBuf, 0, 8, 0);
    const hlen = Number(lenBuf.readBigUInt64LE(0));
    if (hlen > size - 8)
      throw new InputError(`truncated: header says ${hlen} bytes but the file has ${size - 8} after the length`, {
        file,
      });
    const hbuf = Buffer.alloc(hlen);
    readSync(fd, hbuf, 0, hlen, 8);
    const { header, metadata } = parseHeader(hbuf, file);
    const entries = new Map<string, TensorEntry>();
    for (const [name, info] of checkEntries(header, size - 8 - hlen, file)) {
      entries.set(name, {
        name,
        dtype: info.dtype,
        shape: info.shape,
        file,
        at: 8 + hlen + info.begin,
        bytes: info.end - info.begin,
      });
    }
    return { entries, metadata };
  } finally {
    closeSync(fd);
  }
}

/** The values of one tensor found by readSafetensorsHeader, as float32. */
export function readTensorEntry(entry: TensorEntry, fd?: number): Float32Array {
  const own = fd === undefined;
  const f = own ? openSync(entry.file, 'r') : fd;
  try {
    const buf = Buffer.alloc(entry.bytes);
    let got = 0;
    while (got < entry.bytes) {
      const n = readSync(f, buf, got, entry.bytes - got, entry.at + got);
      if (n === 0) throw new InputError(`truncated while reading the tensor`, { file: entry.file, field: entry.name });
      got += n;
    }
    return decode(
      buf,
      0,
      entry.shape.reduce((a, x) => a * x, 1),
      entry.dtype,
    );
  } finally {
    if (own) closeSync(f);
  }
}

function parseHeader(
  hbytes: Buffer,
  file: string,
): { header: Record<string, unknown>; metadata: Record<string, string> } {
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(hbytes.toString('utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new InputError(`header is not valid JSON (${(e as Error).message})`, { file });
  }
  if (!header || typeof header !== 'object' || Array.isArray(header))
    throw new InputError('header is not a JSON object', { file });
  return { header, metadata: (header.__metadata__ ?? {}) as Record<string, string> };
}

/** Every tensor entry of a header, validated: dtype, shape, offsets consistent and inside the data section. */
function checkEntries(
  header: Record<string, unknown>,
  dataLen: number,
  file: string,
): Map<string, { dtype: StoredTensor['dtype']; shape: number[]; begin: number; end: number }> {
  const out = new Map<string, { dtype: StoredTensor['dtype']; shape: number[]; begin: number; end: number }>();
  for (const [name, raw] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const info = raw as { dtype?: string; shape?: unknown; data_offsets?: unknown };
    const where = { file, field: name };
    if (!info || typeof info !== 'object') throw new InputError('tensor entry is not an object', where);
    const dtype = info.dtype as StoredTensor['dtype'];
    if (!(dtype in BYTES)) throw new InputError(`unsupported dtype '${String(info.dtype)}'`, where);
    if (!Array.isArray(info.shape) || !info.shape.every((d) => Number.isInteger(d) && d >= 0))
      throw new InputError('shape is not a list of sizes', where);
    const offs = info.data_offsets;
    if (
      !Array.isArray(offs) ||
      offs.length !== 2 ||
      !offs.every((o) => Number.isInteger(o) && o >= 0) ||
      offs[1] < offs[0]
    )
      throw new InputError('data_offsets is not [begin, end]', where);
    const [b, e] = offs as [number, number];
    const n = (info.shape as number[]).reduce((a, x) => a * x, 1);
    if (e - b !== n * BYTES[dtype])
      throw new InputError(
        `shape [${info.shape}] of ${dtype} needs ${n * BYTES[dtype]} bytes but data_offsets span ${e - b}`,
        where,
      );
    if (e > dataLen)
      throw new InputError(
        `truncated: tensor needs bytes ${b}..${e} of the data section but the file has only ${dataLen}`,
        where,
      );
    out.set(name, { dtype, shape: info.shape as number[], begin: b, end: e });
  }
  // The format forbids tensors sharing bytes: two names over one range would alias silently.
  const spans = [...out].filter(([, t]) => t.end > t.begin).sort((x, y) => x[1].begin - y[1].begin);
  for (let i = 1; i < spans.length; i++) {
    const [pn, p] = spans[i - 1]!;
    const [n, t] = spans[i]!;
    if (t.begin < p.end)
      throw new InputError(
        `data_offsets [${t.begin}, ${t.end}] overlap those of '${pn}' [${p.begin}, ${p.end}] (tensors may not share bytes)`,
        { file, field: n },
      );
  }
  return out;
}

export function readSafetensors(
  buf: Buffer,
  file: string,
): { tensors: Map<string, StoredTensor>; metadata: Record<string, string> } {
  if (buf.length < 8)
    throw new InputError(`not a safetensors file: ${buf.length} bytes, the header length alone needs 8`, { file });
  const hlen = Number(buf.readBigUInt64LE(0));
  if (hlen > buf.length - 8)
    throw new InputError(`truncated: header says ${hlen} bytes but the file has ${buf.length - 8} after the length`, {
      file,
    });
  const { header, metadata } = parseHeader(buf.subarray(8, 8 + hlen), file);
  const dataStart = 8 + hlen;
  const tensors = new Map<string, StoredTensor>();
  for (const [name, t] of checkEntries(header, buf.length - dataStart, file)) {
    const n = t.shape.reduce((a, x) => a * x, 1);
    tensors.set(name, { dtype: t.dtype, shape: t.shape, data: decode(buf, dataStart + t.begin, n, t.dtype) });
  }
  return { tensors, metadata };
}

function decode(buf: Buffer, at: number, n: number, dtype: StoredTensor['dtype']): Float32Array {
  const out = new Float32Array(n);
  switch (dtype) {
    case 'F32':
      // Copy into fresh (aligned) memory; the data section need not be 4-byte aligned in the file.
      new Uint8Array(out.buffer).set(buf.subarray(at, at + 4 * n));
      break;
    case 'I32':
      for (let i = 0; i < n; i++) out[i] = buf.readInt32LE(at + 4 * i);
      break;
    case 'I64':
      for (let i = 0; i < n; i++) out[i] = Number(buf.readBigInt64LE(at + 8 * i));
      break;
    case 'BF16': {
      const u = new Uint32Array(1);
      const f = new Float32Array(u.buffer);
      for (let i = 0; i < n; i++) {
        u[0] = buf.readUInt16LE(at + 2 * i) << 16;
        out[i] = f[0]!;
      }
      break;
    }
    case 'F16':
      for (let i = 0; i < n; i++) out[i] = halfToFloat(buf.readUInt16LE(at + 2 * i));
      break;
  }
  return out;
}

function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * Math.pow(2, -14) * (m / 1024);
  if (e === 31) return m ? NaN : s * Infinity;
  return s * Math.pow(2, e - 15) * (1 + m / 1024);
}
