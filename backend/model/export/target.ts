// Where an export lands, without losing anything the user owns there. Every format writes into a
// fresh temp folder (removed on failure or SIGINT / SIGTERM) and is put in place at the end: when
// OUT is new, the temp folder is beside it (`OUT.tmp-PID-XXXXXX`) and renamed to OUT; when OUT is a
// folder already (empty, or with `force` not empty), the temp folder is inside it
// (`OUT/.rft-export-tmp-PID-XXXXXX`) and only the export's own files are renamed from it into OUT,
// each replacing its namesake and every other file left as it was. Inside OUT, the renames stay on
// OUT's file system: OUT may be a mount point (a volume root cannot be removed, EBUSY, nor take
// a rename from another volume, EXDEV). Without `force` a non-empty folder is refused; a file (or a
// link) at OUT always is: the export writes a folder there.
// Imports only node:fs / node:path: the server checks targets with it without the tensor engine.
import {
  accessSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmdirSync,
  rmSync,
} from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { InfrastructureError, InputError, RftError } from '../../core/errors.js';

export type ExportFormat = 'hf' | 'peft' | 'gguf';

/** What each format writes into its folder (for messages: what `force` replaces). */
export const EXPORT_FILES: Record<ExportFormat, string> = {
  hf: 'config.json, model.safetensors and the tokenizer files',
  peft: 'adapter_config.json and adapter_model.safetensors',
  gguf: 'model.gguf',
};

export interface TargetOptions {
  format: ExportFormat;
  force: boolean;
  /** How the caller turns force on, for the message: `--force` (CLI) or `force: true` (RPC). */
  forceHint?: string;
  /** The folder being exported: OUT may not be it, inside it or above it. */
  source?: string;
}

/** The temp folder's prefix inside an existing OUT (not counted as the user's entry when OUT is re-checked). */
const TMP_INSIDE = '.rft-export-tmp-';

const inside = (child: string, parent: string) =>
  child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);

/** The nearest folder that exists at or above `p`. */
function existingAncestor(p: string): string {
  let d = p;
  while (!existsSync(d) && dirname(d) !== d) d = dirname(d);
  return d;
}

/** Refuses a target the export may not write to; call it before any work and again before placing. */
export function checkExportTarget(outArg: string, o: TargetOptions): void {
  const out = resolve(outArg);
  const hint = o.forceHint ?? '--force';
  if (o.source) {
    const src = resolve(o.source);
    if (inside(out, src) || inside(src, out))
      throw new InputError(
        `${out}: the output would overlap the checkpoint being exported (${src}): choose a folder outside it`,
        { field: 'out' },
      );
  }
  let st;
  try {
    st = lstatSync(out);
  } catch {
    st = undefined;
  }
  if (st?.isSymbolicLink())
    throw new InputError(
      `${out}: is a link; the export writes a folder there and does not follow links: choose another output folder`,
      { field: 'out' },
    );
  if (st && !st.isDirectory())
    throw new InputError(
      `${out}: a file of that name exists and the export writes a folder there: choose another output folder, or move the file away yourself (${hint} never replaces a file with a folder)`,
      { field: 'out' },
    );
  if (st) {
    const entries = readdirSync(out).filter((e) => !e.startsWith(`${TMP_INSIDE}${process.pid}-`));
    if (entries.length > 0 && !o.force) {
      const shown = entries.slice(0, 5).join(', ') + (entries.length > 5 ? `, ... (${entries.length} entries)` : '');
      throw new InputError(
        `${out}: the folder is not empty (${shown}): choose a new or empty folder, or pass ${hint} to replace only the files this export writes (${EXPORT_FILES[o.format]}); other files in it are kept`,
        { field: 'out' },
      );
    }
  }
  // A folder we cannot create files in: say which one (the OS would say ENOENT / EACCES on a temp name).
  const parent = st ? out : existingAncestor(dirname(out));
  try {
    accessSync(parent, constants.W_OK);
  } catch (e) {
    throw new InputError(
      `${out}: cannot write there: ${parent} is not writable (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      { field: 'out' },
    );
  }
}

/**
 * Removes the temp folder if the process is interrupted while it writes (SIGTERM: the server
 * cancelled), then dies of the same signal, as it would have without the handler.
 */
function removeOnSignal(tmp: string): () => void {
  const off = () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
  const handler = (sig: NodeJS.Signals) => {
    rmSync(tmp, { recursive: true, force: true });
    off();
    process.kill(process.pid, sig);
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return off;
}

function placeError(out: string, e: unknown): RftError {
  const x = e as NodeJS.ErrnoException;
  // A full disk is not the user's input: an infrastructure failure, with the folder it happened in.
  if (x.code === 'ENOSPC' || x.code === 'EDQUOT')
    return new InfrastructureError(
      `${out}: the disk is full (${x.code}) while writing the export: nothing was put in place and its temp files are removed`,
    );
  return new InputError(
    `${out}: cannot put the export in place: ${x.code === 'EACCES' || x.code === 'EPERM' || x.code === 'EROFS' ? `not writable (${x.code})` : x.message}`,
    { field: 'out' },
  );
}

/**
 * A new folder `prefix` + 6 random characters, made with the usual mode (0777 less the umask, as the
 * HF export's own folder): mkdtemp's 0700 became the export's mode when renamed into place.
 */
function freshFolder(prefix: string): string {
  for (let i = 0; ; i++) {
    const dir = prefix + Math.random().toString(36).slice(2, 8).padEnd(6, '0');
    try {
      mkdirSync(dir);
      return dir;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || i >= 100) throw e;
    }
  }
}

/**
 * Runs `write(tmp)` into a fresh temp folder beside `out`, then puts its files in place (see the top
 * of this file). Returns the files written, by name. The temp folder never outlives a failure.
 */
export async function writeExport(
  outArg: string,
  o: TargetOptions,
  write: (tmp: string) => Promise<void>,
): Promise<string[]> {
  const out = resolve(outArg);
  checkExportTarget(out, o);
  try {
    mkdirSync(dirname(out), { recursive: true });
  } catch (e) {
    throw placeError(out, e);
  }
  // An existing OUT (perhaps a mount point) takes the temp folder inside it: same file system.
  const into = existsSync(out);
  let tmp: string;
  try {
    tmp = freshFolder(into ? join(out, `${TMP_INSIDE}${process.pid}-`) : `${out}.tmp-${process.pid}-`);
  } catch (e) {
    throw placeError(out, e);
  }
  const restore = removeOnSignal(tmp);
  try {
    await write(tmp);
    const files = readdirSync(tmp);
    // The target may have changed while the weights were written: check it again before placing.
    checkExportTarget(out, o);
    if (!into) {
      renameSync(tmp, out);
      return files;
    }
    // force into a non-empty folder: one rename per file the export wrote; a folder of the user's
    // under one of those names is not replaced.
    for (const f of files) {
      const there = join(out, f);
      if (existsSync(there) && lstatSync(there).isDirectory())
        throw new InputError(
          `${there}: is a folder, where the export writes its file ${f}: move it away, or choose another output folder`,
          { field: 'out' },
        );
    }
    for (const f of files) renameSync(join(tmp, f), join(out, f));
    rmdirSync(tmp);
    return files;
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    if (e instanceof RftError) throw e;
    const x = e as NodeJS.ErrnoException;
    if (['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'EDQUOT'].includes(x.code ?? '')) throw placeError(out, e);
    throw e;
  } finally {
    restore();
  }
}
