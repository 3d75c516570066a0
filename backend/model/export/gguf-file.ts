// The GGUF container (version 3, as llama.cpp reads it): magic, counts, typed key/values, tensor
// infos (dims innermost first, offsets into an aligned data section), then the tensor data.
import { closeSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { floatToHalf } from '../safetensors.js';

export const GGUF_ALIGNMENT = 32;
const T = { U32: 4, I32: 5, F32: 6, BOOL: 7, STRING: 8, ARRAY: 9, U64: 10 } as const;
export const GGML_F32 = 0;
export const GGML_F16 = 1;

export type GgufValue =
  | { type: 'u32'; value: number }
  | { type: 'i32'; value: number }
  | { type: 'f32'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'strings'; value: string[] }
  | { type: 'i32s'; value: number[] }
  | { type: 'f32s'; value: number[] };

export interface GgufTensor {
  name: string;
  /** Row-major shape as in PyTorch / safetensors (outermost first); written reversed, as ggml's ne. */
  shape: number[];
  data: Float32Array;
  ggmlType: typeof GGML_F32 | typeof GGML_F16;
}

/** Growable little-endian byte writer. */
class Bytes {
  private buf = Buffer.alloc(1 << 16);
  length = 0;
  private room(n: number) {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const b = Buffer.alloc(size);
    this.buf.copy(b, 0, 0, this.length);
    this.buf = b;
  }
  u32(v: number) {
    this.room(4);
    this.buf.writeUInt32LE(v, this.length);
    this.length += 4;
  }
  i32(v: number) {
    this.room(4);
    this.buf.writeInt32LE(v, this.length);
    this.length += 4;
  }
  u64(v: number) {
    this.room(8);
    this.buf.writeBigUInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  f32(v: number) {
    this.room(4);
    this.buf.writeFloatLE(v, this.length);
    this.length += 4;
  }
  u8(v: number) {
    this.room(1);
    this.buf[this.length++] = v;
  }
  str(s: string) {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.room(b.length);
    b.copy(this.buf, this.length);
    this.length += b.length;
  }
  pad(align: number) {
    while (this.length % align) this.u8(0);
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function writeValue(w: Bytes, v: GgufValue): void {
  switch (v.type) {
    case 'u32':
      w.u32(T.U32), w.u32(v.value);
      break;
    case 'i32':
      w.u32(T.I32), w.i32(v.value);
      break;
    case 'f32':
      w.u32(T.F32), w.f32(v.value);
      break;
    case 'bool':
      w.u32(T.BOOL), w.u8(v.value ? 1 : 0);
      break;
    case 'string':
      w.u32(T.STRING), w.str(v.value);
      break;
    case 'strings':
      w.u32(T.ARRAY), w.u32(T.STRING), w.u64(v.value.length);
      for (const s of v.value) w.str(s);
      break;
    case 'i32s':
      w.u32(T.ARRAY), w.u32(T.I32), w.u64(v.value.length);
      for (const x of v.value) w.i32(x);
      break;
    case 'f32s':
      w.u32(T.ARRAY), w.u32(T.F32), w.u64(v.value.length);
      for (const x of v.value) w.f32(x);
      break;
  }
}

/**
 * Writes a GGUF file; tensor data is streamed after the header so a large model is not copied whole.
 * It goes to `FILE.tmp-PID` and is renamed at the end: a process killed while writing leaves no
 * truncated FILE (whose valid header llama.cpp would read), and the temp file goes on any error.
 */
export function writeGguf(file: string, kv: [string, GgufValue][], tensors: GgufTensor[]): void {
  const w = new Bytes();
  w.u32(0x46554747); // "GGUF"
  w.u32(3);
  w.u64(tensors.length);
  w.u64(kv.length + 1);
  w.str('general.alignment');
  writeValue(w, { type: 'u32', value: GGUF_ALIGNMENT });
  for (const [k, v] of kv) {
    w.str(k);
    writeValue(w, v);
  }
  let offset = 0;
  const sizes: number[] = [];
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length)
      throw new Error(`gguf: tensor ${t.name} has ${t.data.length} values for shape [${t.shape}]`);
    w.str(t.name);
    w.u32(t.shape.length);
    for (const d of [...t.shape].reverse()) w.u64(d);
    w.u32(t.ggmlType);
    w.u64(offset);
    const bytes = n * (t.ggmlType === GGML_F16 ? 2 : 4);
    sizes.push(bytes);
    offset += Math.ceil(bytes / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;
  }
  w.pad(GGUF_ALIGNMENT);
  const tmp = `${file}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w');
  try {
    try {
      writeSync(fd, w.bytes());
      const zeros = Buffer.alloc(GGUF_ALIGNMENT);
      tensors.forEach((t, i) => {
        let b: Buffer;
        if (t.ggmlType === GGML_F32) b = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
        else {
          b = Buffer.alloc(t.data.length * 2);
          for (let j = 0; j < t.data.length; j++) b.writeUInt16LE(floatToHalf(t.data[j]!), 2 * j);
        }
        writeSync(fd, b);
        const pad = (GGUF_ALIGNMENT - (sizes[i]! % GGUF_ALIGNMENT)) % GGUF_ALIGNMENT;
        if (pad) writeSync(fd, zeros, 0, pad);
      });
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
