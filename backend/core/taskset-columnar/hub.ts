// A dataset folder as a taskset path: the Hugging Face hub cache's layout
// (`datasets--ORG--NAME/snapshots/<rev>/`, the revision through refs/main or the only snapshot) or
// any folder of split files (`train-00000-of-00002.parquet`, `data/test-*.parquet`,
// `default/train/0000.parquet`, the `datasets` cache's `gsm8k-train.arrow`). A file's split is the
// word before its shard numbers, or its folder when the file is only a number. Config subfolders
// (`main/`, `socratic/`) are told apart: `split: socratic/train` picks one where there are several.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { formatByExtension } from '../taskset-text/index.js';

export interface DatasetFolder {
  /** The folder whose files were listed (a hub snapshot, or the path itself). */
  root: string;
  /** `CONFIG/SPLIT` (config '' at the root) -> its files, in shard order. */
  splits: Map<string, string[]>;
}

const SPLIT_WORD = /^\w+(\.\w+)*$/;

/** A hub cache entry (`datasets--ORG--NAME`): the snapshot refs/main names, else its only one. */
export function hubSnapshot(dir: string): string | undefined {
  const snaps = join(dir, 'snapshots');
  if (!existsSync(snaps)) return undefined;
  const ref = join(dir, 'refs', 'main');
  if (existsSync(ref)) {
    const rev = readFileSync(ref, 'utf8').trim();
    if (existsSync(join(snaps, rev))) return join(snaps, rev);
  }
  const revs = readdirSync(snaps).filter((r) => statSync(join(snaps, r)).isDirectory());
  if (revs.length === 1) return join(snaps, revs[0]!);
  throw new Error(
    `${revs.length} snapshots and no refs/main naming one of them (${revs.join(', ') || 'none'}): give the path of one snapshot`,
  );
}

/** Split names recognised without shard numbers (`train.jsonl`, `gsm8k-test.arrow`), as the hub's own. */
const KNOWN_SPLITS = new Set(['train', 'test', 'validation', 'valid', 'dev', 'eval']);

/**
 * The split a data file holds, else undefined: any word before shard numbers (`NAME-00000-of-00002`),
 * a known split word as the name's last part (`train.jsonl`), or the folder of numbered files
 * (`train/0000.parquet`). Another file (`notes.jsonl`) belongs to no split.
 */
export function splitOfFile(rel: string): string | undefined {
  const stem = basename(rel).replace(/\.[^.]+$/, '');
  // `train-00000-of-00002`, `train-00000-of-00002-1a2b3c` (hub), `gsm8k-train-00000-of-00002` (datasets cache)
  const rest = stem.replace(/-\d+-of-\d+(-[0-9a-f]+)?$/i, '');
  if (/^\d+$/.test(rest)) {
    const parent = basename(dirname(rel));
    return SPLIT_WORD.test(parent) && parent !== '.' ? parent : undefined;
  }
  const word = rest.split('-').pop()!;
  if (!SPLIT_WORD.test(word)) return undefined;
  return rest !== stem || KNOWN_SPLITS.has(word.toLowerCase()) ? word : undefined;
}

/** The config a file belongs to: its first folder under the root, unless that folder is the split's own or `data`. */
function configOf(rel: string, split: string): string {
  const parts = rel
    .split(sep)
    .slice(0, -1)
    .filter((p) => p !== 'data' && p !== split);
  return parts[0] ?? '';
}

function listFiles(dir: string, depth: number, out: string[]): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory() || (e.isSymbolicLink() && statSync(p).isDirectory())) {
      if (depth > 0) listFiles(p, depth - 1, out);
    } else if (formatByExtension(p)) out.push(p);
  }
}

/** The splits of a dataset folder (hub cache entry or plain folder of split files). */
export function datasetFolder(path: string): DatasetFolder {
  const root = hubSnapshot(path) ?? path;
  const files: string[] = [];
  listFiles(root, 3, files);
  const splits = new Map<string, string[]>();
  for (const f of files.sort()) {
    const rel = relative(root, f);
    const split = splitOfFile(rel);
    if (!split) continue;
    const config = configOf(rel, split);
    const key = config ? `${config}/${split}` : split;
    (splits.get(key) ?? splits.set(key, []).get(key)!).push(f);
  }
  return { root, splits };
}

/**
 * The files of `split` (`train`, or `CONFIG/train`); without one, the dataset's only split, else
 * the first of `defaults` it has. Throws a message listing the splits there are.
 */
export function splitFiles(
  d: DatasetFolder,
  split: string | undefined,
  defaults: string[],
): { split: string; files: string[] } {
  const keys = [...d.splits.keys()];
  if (keys.length === 0)
    throw new Error(
      `no data files named by split (SPLIT-00000-of-00001.parquet, SPLIT.jsonl, SPLIT/0000.parquet, ...)`,
    );
  const list = keys.join(', ');
  const match = (name: string) => {
    if (d.splits.has(name)) return [name];
    return keys.filter((k) => k.endsWith(`/${name}`));
  };
  let want = split;
  if (want === undefined) {
    const bare = new Set(keys.map((k) => k.split('/').pop()!));
    if (keys.length === 1) want = keys[0]!;
    else want = defaults.find((s) => match(s).length === 1) ?? defaults.find((s) => bare.has(s));
    if (want === undefined) throw new Error(`the dataset has the splits ${list}: choose one with split`);
  }
  const found = match(want);
  if (found.length === 1) return { split: found[0]!, files: d.splits.get(found[0]!)! };
  if (found.length > 1)
    throw new Error(`split '${want}' is in several configs (${found.join(', ')}): give split as CONFIG/${want}`);
  throw new Error(`no split '${want}'; the dataset has ${list}`);
}
