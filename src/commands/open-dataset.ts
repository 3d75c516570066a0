// "Open Dataset…": a dataset of the Hugging Face cache (HF_HUB_CACHE, else HF_HOME/hub, else
// ~/.cache/huggingface/hub; found by the backend as Import Model finds models) or a folder of split
// files, one split picked by its name and row count, then Map Fields on its first rows: the mapping
// proposed from its columns is written into a config that reads the folder with `split:` (a new
// config also gets the dataset's test split as its eval set).
import * as vscode from 'vscode';
import type { DatasetSplit } from '../../backend/core/protocol.js';
import { showBackendError } from '../errors.js';
import type { Services } from '../services.js';
import { mapDataset, type MappingWritten } from './map-fields.js';
import { browseFolder } from '../pick-folder.js';

type Item = vscode.QuickPickItem & { dir?: string; split?: string; browse?: true };

const rowsOf = (sp: DatasetSplit) =>
  `${sp.rows !== undefined ? `${sp.rows.toLocaleString('en-US')} rows` : 'rows unknown'}, ${sp.files} file${sp.files === 1 ? '' : 's'}`;

/** The held-out split a new config evaluates on: test, else validation, never the one trained on. */
function evalSplitOf(splits: DatasetSplit[], train: string): string | undefined {
  const config = train.includes('/') ? `${train.slice(0, train.lastIndexOf('/'))}/` : '';
  for (const name of ['test', 'validation'])
    if (splits.some((sp) => sp.name === config + name) && config + name !== train) return config + name;
  return undefined;
}

async function pickSplit(dir: string, splits: DatasetSplit[]): Promise<string | undefined> {
  if (splits.length === 1) return splits[0]!.name;
  const pick = await vscode.window.showQuickPick(
    splits.map((sp) => ({ label: sp.name, description: rowsOf(sp), split: sp.name })),
    { title: `Open dataset ${dir}: which split?`, ignoreFocusOut: true },
  );
  return pick?.split;
}

export async function openDataset(s: Services): Promise<MappingWritten | undefined> {
  const cache = await s.client
    .request('datasets/cache', {})
    .catch((e) => (s.output.warn(`HF cache: ${String(e)}`), { roots: [] as string[], datasets: [] }));
  const BROWSE: Item = {
    label: '$(folder-opened) Browse…',
    detail: 'a folder of split files (train-00000-of-00001.parquet, data/test-*.parquet, ...)',
    browse: true,
    alwaysShow: true,
  };
  const items: Item[] = [
    ...(cache.datasets.length ? [{ label: 'Hugging Face cache', kind: vscode.QuickPickItemKind.Separator }] : []),
    ...cache.datasets.flatMap((d) =>
      d.splits.map((sp) => ({
        label: `${d.repo}: ${sp.name}`,
        description: rowsOf(sp),
        detail: d.dir,
        dir: d.dir,
        split: sp.name,
      })),
    ),
    { label: '', kind: vscode.QuickPickItemKind.Separator },
    BROWSE,
  ];
  const pick = await vscode.window.showQuickPick<Item>(items, {
    title: 'Open dataset',
    placeHolder: cache.datasets.length
      ? 'A dataset split from the Hugging Face cache, or a folder'
      : `No dataset in the Hugging Face cache (${cache.roots.join(', ')}): browse for a folder`,
    matchOnDetail: true,
    ignoreFocusOut: true,
  });
  if (!pick) return undefined;
  let dir = pick.dir;
  let split = pick.split;
  if (pick.browse) dir = await browseFolder('Dataset folder (a hub cache entry or a folder of split files)', 'Open');
  if (!dir) return undefined;
  try {
    let preview = await s.client.request('datasets/preview', { dir, ...(split ? { split } : {}) });
    if (!split) {
      split = await pickSplit(dir, preview.splits);
      if (!split) return undefined;
      if (split !== preview.split) preview = await s.client.request('datasets/preview', { dir, split });
    }
    if (!preview.records.length) {
      void vscode.window.showWarningMessage(`${dir} (${split}): no rows to map.`);
      return undefined;
    }
    s.output.info(
      `Dataset ${dir}, split ${preview.split}: columns ${preview.columns.map((c) => `${c.name} (${c.type})`).join(', ')}`,
    );
    const label = `${pick.dir ? pick.label.split(':')[0] : dir} (${preview.split})`;
    return await mapDataset(s, vscode.Uri.file(dir), label, preview.records, {
      split: preview.split,
      ...(evalSplitOf(preview.splits, preview.split) ? { evalSplit: evalSplitOf(preview.splits, preview.split)! } : {}),
    });
  } catch (err) {
    await showBackendError('Open dataset', err, s.output);
    return undefined;
  }
}
