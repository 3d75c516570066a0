// The files a run config names (taskset, eval, experts) that are not there: refused before any work
// with the path as written and where it was looked for, instead of an ENOENT at step 0. Used by
// `rft run` (coordinator/load-config.ts) and the editor's config diagnostics (server config/validate).
import { existsSync, statSync } from 'node:fs';
import { specialKind } from './regular-file.js';
import { dirname, isAbsolute, resolve } from 'node:path';

export interface MissingFile {
  /** Dotted config path: `taskset.path`. */
  path: string;
  message: string;
}

const FILE_FIELDS = ['taskset', 'eval', 'experts'] as const;

/** `raw`: the parsed config (before or after validation); paths are relative to `configFile`. */
export function missingConfigFiles(raw: unknown, configFile: string): MissingFile[] {
  if (!raw || typeof raw !== 'object') return [];
  const out: MissingFile[] = [];
  for (const section of FILE_FIELDS) {
    const ref = (raw as Record<string, unknown>)[section];
    const p = ref && typeof ref === 'object' ? (ref as Record<string, unknown>).path : undefined;
    if (typeof p !== 'string' || !p) continue;
    const abs = isAbsolute(p) ? p : resolve(dirname(resolve(configFile)), p);
    if (!existsSync(abs))
      out.push({
        path: `${section}.path`,
        message: `no file '${p}' (looked for ${abs}; paths are relative to the config file)`,
      });
    else if (statSync(abs).isDirectory())
      out.push({
        path: `${section}.path`,
        message: `'${p}' is a folder: name a taskset file (.jsonl, .json, .yaml, .csv)`,
      });
    else if (specialKind(abs))
      // A FIFO or a device would block the read or never end it.
      out.push({ path: `${section}.path`, message: `'${p}' is ${specialKind(abs)}, not a file (${abs})` });
  }
  return out;
}
