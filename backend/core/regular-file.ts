// Every file of the user's is read through here, only when it is a regular file and under a size cap.
// A FIFO (or a device) in place of a config, a taskset or tokenizer.json blocked the open until a
// writer came, or read forever (/dev/zero, /dev/urandom): the command hung with no message and the
// server stopped answering. stat() first refuses such a file without opening it; O_NONBLOCK makes
// the open of a FIFO put there after the stat return at once, and fstat then names it. The server
// reads through readRegularFileAsync, so no read runs on its main thread.
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync, statSync, type Stats } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { InputError } from './errors.js';

/** Size caps by kind of file: a larger one is refused by name before it is read. */
export const MAX_BYTES = {
  /** Run configs (YAML): a real one is a few KB; parsing YAML costs ~1 s a MB, on the server's main thread. */
  config: 256 * 1024,
  /** Model and tokenizer JSON (a real tokenizer.json is ~11 MB). */
  json: 256 * 1024 * 1024,
  /** Tasksets, eval and experts files: below V8's longest string (~512 MiB), which they are decoded to. */
  taskset: 512 * 1024 * 1024,
} as const;

function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isDirectory()) return 'a folder';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

const mb = (n: number) =>
  n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} bytes`;

/** The refusal of FILE (followed to `target` when it is a link to something else). */
function refuse(file: string, st: Stats): InputError {
  let target = '';
  try {
    const real = realpathSync(file);
    if (real !== file) target = ` (a link to ${real})`;
  } catch {
    // A dangling or unreadable link: the kind is what counts.
  }
  return new InputError(`is ${kindOf(st)}${target}, not a file: refused (reading it could wait forever)`, { file });
}

function tooBig(file: string, size: number, max: number): InputError {
  return new InputError(`is ${mb(size)}, over the limit of ${mb(max)} for this kind of file`, { file });
}

/** Found while reading (the stat said less: a growing file, or /proc): its whole size is not known. */
const grewPast = (file: string, max: number) =>
  new InputError(`is over the limit of ${mb(max)} for this kind of file (it grew while read)`, { file });

/** Throws when FILE (links followed) is not a regular file or is over MAX bytes; ENOENT and the like as they come. */
export function assertRegularFile(file: string, max = Number.POSITIVE_INFINITY): Stats {
  const st = statSync(file);
  if (!st.isFile()) throw refuse(file, st);
  if (st.size > max) throw tooBig(file, st.size, max);
  return st;
}

/** Why FILE (links followed, it exists) cannot be read as a file: 'a FIFO (named pipe)', ...; undefined for a regular file. */
export function specialKind(file: string): string | undefined {
  const st = statSync(file);
  return st.isFile() ? undefined : kindOf(st);
}

const FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

/** Opens FILE for reading; throws an InputError naming it when it is not a regular file (links are followed). */
export function openRegularFile(file: string): number {
  assertRegularFile(file);
  // O_NONBLOCK: no wait for the writer of a FIFO swapped in after the stat; no effect on regular files (absent on Windows: 0).
  const fd = openSync(file, FLAGS);
  let st: Stats;
  try {
    st = fstatSync(fd);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  if (!st.isFile()) {
    closeSync(fd);
    throw refuse(file, st);
  }
  return fd;
}

/** BUF with room for more, never past MAX + 1 bytes (one past the cap says the file is over it). */
function grown(buf: Buffer, max: number): Buffer {
  const next = Buffer.allocUnsafe(Math.min(Math.max(buf.length * 2, 64 * 1024), max + 1));
  buf.copy(next);
  return next;
}

/**
 * Reads to the end (a file that says size 0, as on /proc or some FUSE mounts, is read whole too) but
 * never more than MAX bytes: a file that grows while it is read is refused, not read without end.
 */
function readUpTo(size: number, max: number, file: string, read: (buf: Buffer, off: number) => number): Buffer {
  let buf: Buffer = Buffer.allocUnsafe(Math.min(size, max) + 1);
  let n = 0;
  for (;;) {
    if (n === buf.length) buf = grown(buf, max);
    const r = read(buf, n);
    n += r;
    if (n > max) throw grewPast(file, max);
    if (r === 0) return Buffer.from(buf.subarray(0, n));
  }
}

/** readFileSync for the user's files: a FIFO, a device or a file over MAX bytes is refused by name instead of hanging. */
export function readRegularFile(file: string, encoding?: undefined, max?: number): Buffer;
export function readRegularFile(file: string, encoding: BufferEncoding, max?: number): string;
export function readRegularFile(
  file: string,
  encoding?: BufferEncoding,
  max: number = MAX_BYTES.json,
): string | Buffer {
  const fd = openRegularFile(file);
  try {
    const size = fstatSync(fd).size;
    if (size > max) throw tooBig(file, size, max);
    const buf = readUpTo(size, max, file, (b, off) => readSync(fd, b, off, b.length - off, null));
    return encoding ? buf.toString(encoding) : buf;
  } finally {
    closeSync(fd);
  }
}

/** The same check and read on libuv's thread pool: the server's main thread never opens nor reads a file. */
export async function readRegularFileAsync(file: string, max: number = MAX_BYTES.json): Promise<Buffer> {
  const st0 = await stat(file);
  if (!st0.isFile()) throw refuse(file, st0);
  if (st0.size > max) throw tooBig(file, st0.size, max);
  const fh = await open(file, FLAGS);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw refuse(file, st);
    if (st.size > max) throw tooBig(file, st.size, max);
    // The same loop as readUpTo, awaiting each read.
    let buf: Buffer = Buffer.allocUnsafe(Math.min(st.size, max) + 1);
    let n = 0;
    for (;;) {
      if (n === buf.length) buf = grown(buf, max);
      const { bytesRead } = await fh.read(buf, n, buf.length - n, null);
      n += bytesRead;
      if (n > max) throw grewPast(file, max);
      if (bytesRead === 0) return Buffer.from(buf.subarray(0, n));
    }
  } finally {
    await fh.close();
  }
}
