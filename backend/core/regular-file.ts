// Model, tokenizer and config files are read only when they are regular files. A FIFO (or a device)
// in place of model.safetensors or tokenizer.json blocked the open until a writer came: the command
// hung with no message. O_NONBLOCK makes the open of a FIFO return at once; fstat then names it.
import { closeSync, constants, fstatSync, openSync, readFileSync, type Stats } from 'node:fs';
import { InputError } from './errors.js';

function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isDirectory()) return 'a folder';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/** Opens FILE for reading; throws an InputError naming it when it is not a regular file (links are followed). */
export function openRegularFile(file: string): number {
  // O_NONBLOCK: no wait for a FIFO's writer; it has no effect on regular files (absent on Windows: 0).
  const fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  let st: Stats;
  try {
    st = fstatSync(fd);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  if (!st.isFile()) {
    closeSync(fd);
    throw new InputError(`is ${kindOf(st)}, not a file: refused (reading it could wait forever)`, { file });
  }
  return fd;
}

/** readFileSync for model, tokenizer and config files: a FIFO or device is refused by name instead of hanging. */
export function readRegularFile(file: string): Buffer;
export function readRegularFile(file: string, encoding: BufferEncoding): string;
export function readRegularFile(file: string, encoding?: BufferEncoding): string | Buffer {
  const fd = openRegularFile(file);
  try {
    return encoding ? readFileSync(fd, encoding) : readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}
