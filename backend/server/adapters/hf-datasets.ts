// Datasets for the editor's "Open Dataset…": the hub cache's dataset entries (datasets--ORG--NAME,
// beside the models hf-cache.ts finds) with their splits and row counts (Parquet footers only:
// nothing is read whole), and the first records of a split for Map Fields.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { CachedDataset, DatasetPreview, DatasetSplit } from '../../core/protocol.js';
import {
  columnarInfo,
  datasetFolder,
  readColumnar,
  splitFiles,
  type DatasetFolder,
} from '../../core/taskset-columnar/index.js';
import { formatByExtension, isColumnar, readRecords } from '../../core/taskset-text/index.js';
import { readFile } from 'node:fs/promises';

async function splitsOf(d: DatasetFolder): Promise<DatasetSplit[]> {
  const out: DatasetSplit[] = [];
  for (const [name, files] of d.splits) {
    let rows: number | undefined = 0;
    for (const f of files) {
      if (formatByExtension(f) !== 'parquet') {
        rows = undefined;
        break;
      }
      try {
        rows += (await columnarInfo(f, 'parquet')).rows;
      } catch {
        rows = undefined;
        break;
      }
    }
    out.push({ name, files: files.length, ...(rows !== undefined ? { rows } : {}) });
  }
  return out;
}

/** Every dataset entry of the cache roots with at least one split. */
export async function scanHfDatasets(roots: string[]): Promise<CachedDataset[]> {
  const out: CachedDataset[] = [];
  for (const root of roots) {
    let entries: string[];
    try {
      entries = readdirSync(root)
        .filter((e) => e.startsWith('datasets--'))
        .sort();
    } catch {
      continue; // no cache there
    }
    for (const e of entries) {
      const dir = join(root, e);
      let d: DatasetFolder;
      try {
        d = datasetFolder(dir);
      } catch {
        continue; // several snapshots and no refs/main: Browse… names one
      }
      if (d.splits.size === 0) continue;
      out.push({ repo: e.slice('datasets--'.length).split('--').join('/'), dir, splits: await splitsOf(d) });
    }
  }
  return out;
}

/** JSON-safe for the wire: bytes as `<N bytes>`. */
function wire(v: unknown): unknown {
  if (v instanceof Uint8Array) return `<${v.length} bytes>`;
  if (Array.isArray(v)) return v.map(wire);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, wire(x)]));
  return v;
}

export async function previewDataset(dir: string, split: string | undefined, max = 20): Promise<DatasetPreview> {
  const d = datasetFolder(dir);
  const s = splitFiles(d, split, ['train']);
  const first = s.files[0]!;
  const format = formatByExtension(first)!;
  const records: Record<string, unknown>[] = [];
  let columns: DatasetPreview['columns'] = [];
  if (isColumnar(format)) {
    for await (const r of readColumnar(first, format, new Map(), { limit: max }))
      if ('value' in r) records.push(wire(r.value) as Record<string, unknown>);
    if (format === 'parquet') columns = (await columnarInfo(first, format)).columns;
  } else {
    for (const r of readRecords(await readFile(first, 'utf8'), format)) {
      if (records.length >= max) break;
      if ('value' in r && r.value && typeof r.value === 'object') records.push(r.value as Record<string, unknown>);
    }
  }
  if (!columns.length) {
    const names = [...new Set(records.flatMap((r) => Object.keys(r)))];
    columns = names.map((name) => ({ name, type: typeof records.find((r) => name in r)?.[name] }));
  }
  return { dir, splits: await splitsOf(d), split: s.split, columns, records };
}
