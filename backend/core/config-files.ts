// The files a run config names (taskset, eval, experts) that are not there (or a dataset folder
// without the split asked for): refused before any work with the path as written and where it was
// looked for, instead of an ENOENT at step 0. Used by
// `rft run` (coordinator/load-config.ts) and the editor's config diagnostics (server config/validate).
import { existsSync, statSync } from 'node:fs';
import { specialKind } from './regular-file.js';
import { dirname, isAbsolute, resolve } from 'node:path';
import { datasetFolder, splitFiles } from './taskset-columnar/hub.js';

export interface MissingFile {
  /** Dotted config path: `taskset.path`. */
  path: string;
  message: string;
}

const FILE_FIELDS = ['taskset', 'eval', 'experts'] as const;

/**
 * "no file" for a path a config names: a relative one with where it was looked for and the rule
 * (relative to the config file); an absolute one as it is (the rule says nothing about it).
 */
export function noFileMessage(written: string, abs: string): string {
  return isAbsolute(written)
    ? `no file '${written}' (nothing at that absolute path)`
    : `no file '${written}' (looked for ${abs}; paths are relative to the config file)`;
}

/** `raw`: the parsed config (before or after validation); paths are relative to `configFile`. */
export function missingConfigFiles(raw: unknown, configFile: string): MissingFile[] {
  if (!raw || typeof raw !== 'object') return [];
  const out: MissingFile[] = [];
  for (const section of FILE_FIELDS) {
    const ref = (raw as Record<string, unknown>)[section];
    const p = ref && typeof ref === 'object' ? (ref as Record<string, unknown>).path : undefined;
    if (typeof p !== 'string' || !p) continue;
    const split = (ref as Record<string, unknown>).split;
    const abs = isAbsolute(p) ? p : resolve(dirname(resolve(configFile)), p);
    if (!existsSync(abs))
      out.push({
        path: `${section}.path`,
        message: noFileMessage(p, abs),
      });
    else if (statSync(abs).isDirectory()) {
      // A dataset folder (hub cache entry, split shards) is a taskset when `split` (or its default) is there.
      const folder = datasetFolder(abs);
      if (folder.splits.size === 0) {
        out.push({
          path: `${section}.path`,
          message: `'${p}' is a folder without split files (train-00000-of-00001.parquet, ...): name a taskset file (.jsonl, .json, .yaml, .csv, .parquet, .arrow) or a dataset folder`,
        });
        continue;
      }
      try {
        splitFiles(
          folder,
          typeof split === 'string' ? split : undefined,
          section === 'eval' ? ['test', 'validation', 'eval'] : ['train'],
        );
      } catch (e) {
        out.push({ path: `${section}.split`, message: (e as Error).message });
      }
    } else if (typeof split === 'string' && !(ref as Record<string, unknown>).builtin)
      out.push({
        path: `${section}.split`,
        message: `split chooses the split files of a dataset folder; '${p}' is one file`,
      });
    else if (specialKind(abs))
      // A FIFO or a device would block the read or never end it.
      out.push({ path: `${section}.path`, message: `'${p}' is ${specialKind(abs)}, not a file (${abs})` });
  }
  return out;
}
