// The safetensors format: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the raw bytes.
import { InputError } from '../core/errors.js';

export interface StoredTensor {
  dtype: 'F32' | 'F16' | 'BF16' | 'I32' | 'I64';
  shape: number[];
  /** Always float32 after reading (F16/BF16 widened, integers converted). */
  data: Float32Array;
}

const BYTES: Record<StoredTensor['dtype'], number> = { F32: 4, F16: 2, BF16: 2, I32: 4, I64: 8 };

export function writeSafetensors(tensors: Map<string, { shape: number[]; data: Float32Array }>, metadata: Record<string, string> = {}): Buffer {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  const names = [...tensors.keys()].sort();
  for (const name of names) {
    const t = tensors.get(name)!;
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) throw new Error(`tensor '${name}': shape [${t.shape}] holds ${n} values but data has ${t.data.length}`);
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + n * 4] };
    offset += n * 4;
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
    Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).copy(out, pos);
    pos += t.data.byteLength;
  }
  return out;
}

export function readSafetensors(buf: Buffer, file: string): { tensors: Map<string, StoredTensor>; metadata: Record<string, string> } {
  if (buf.length < 8) throw new InputError(`not a safetensors file: ${buf.length} bytes, the header length alone needs 8`, { file });
  const hlen = Number(buf.readBigUInt64LE(0));
  if (hlen > buf.length - 8) throw new InputError(`truncated: header says ${hlen} bytes but the file has ${buf.length - 8} after the length`, { file });
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(buf.subarray(8, 8 + hlen).toString('utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new InputError(`header is not valid JSON (${(e as Error).message})`, { file });
  }
  const dataStart = 8 + hlen;
  const dataLen = buf.length - dataStart;
  const tensors = new Map<string, StoredTensor>();
  const metadata = (header.__metadata__ ?? {}) as Record<string, string>;
  for (const [name, raw] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const info = raw as { dtype?: string; shape?: unknown; data_offsets?: unknown };
    const where = { file, field: name };
    if (!info || typeof info !== 'object') throw new InputError('tensor entry is not an object', where);
    const dtype = info.dtype as StoredTensor['dtype'];
    if (!(dtype in BYTES)) throw new InputError(`unsupported dtype '${String(info.dtype)}'`, where);
    if (!Array.isArray(info.shape) || !info.shape.every((d) => Number.isInteger(d) && d >= 0)) throw new InputError('shape is not a list of sizes', where);
    const offs = info.data_offsets;
    if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((o) => Number.isInteger(o) && o >= 0) || offs[1] < offs[0])
      throw new InputError('data_offsets is not [begin, end]', where);
    const [b, e] = offs as [number, number];
    const n = (info.shape as number[]).reduce((a, x) => a * x, 1);
    if (e - b !== n * BYTES[dtype]) throw new InputError(`shape [${info.shape}] of ${dtype} needs ${n * BYTES[dtype]} bytes but data_offsets span ${e - b}`, where);
    if (e > dataLen) throw new InputError(`truncated: tensor needs bytes ${b}..${e} of the data section but the file has only ${dataLen}`, where);
    tensors.set(name, { dtype, shape: info.shape as number[], data: decode(buf, dataStart + b, n, dtype) });
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
