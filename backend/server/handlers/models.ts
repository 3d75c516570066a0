// models/* (and datasets/*, the same cache): Hugging Face model folders for the editor. Import checks a folder with `rft model info`
// (architecture, parameters, dtype, tokenizer; an unsupported architecture is refused by name) and
// remembers it in .rft/models.json; export runs `rft model export`. Confinement: a model folder the
// user picked may be outside the workspace, but only to be READ (info / import); an export reads a
// checkpoint and writes its output inside the workspace only, never over the workspace's own folders
// (adapters/export-out.ts) nor, without `force`, into a non-empty folder (model/export/target.ts).
import { existsSync, statSync } from 'node:fs';
import { basename, isAbsolute, resolve, sep } from 'node:path';
import type { RpcHost } from '../rpc.js';
import type { WorkspacePaths } from '../confine.js';
import type { ImportedModel, ModelInfo } from '../../core/protocol.js';
import { InputError } from '../../core/errors.js';
import { hfCacheRoots, scanHfCache } from '../adapters/hf-cache.js';
import { previewDataset, scanHfDatasets } from '../adapters/hf-datasets.js';
import { ModelList } from '../adapters/model-list.js';
import { runModelCommand } from '../adapters/model-cli.js';
import { checkExportOut } from '../adapters/export-out.js';
import { checkExportTarget } from '../../model/export/target.js';
import { RunRegistry } from '../../buffer/runs.js';

/** A folder to read a model from: absolute (anywhere) or relative to the workspace; it must exist. */
function modelFolder(paths: WorkspacePaths, dir: unknown): string {
  if (typeof dir !== 'string' || !dir || dir.includes('\0'))
    throw new InputError('a model folder is required', { field: 'dir' });
  const abs = isAbsolute(dir) ? resolve(dir) : resolve(paths.given, dir);
  if (!existsSync(abs) || !statSync(abs).isDirectory())
    throw new InputError('no such folder', { file: abs, field: 'dir' });
  return abs;
}

/** `org/name` for an HF-cache snapshot or entry, else the folder's name. */
export function modelName(dir: string): string {
  const entry = dir
    .split(sep)
    .reverse()
    .find((p) => p.startsWith('models--'));
  return entry ? entry.slice('models--'.length).split('--').join('/') : basename(dir);
}

export function registerModels(rpc: RpcHost, paths: WorkspacePaths): void {
  const cwd = paths.given;
  const info = async (dir: string) => (await runModelCommand(['info', dir], { cwd })) as unknown as ModelInfo;
  let list: Promise<ModelList> | undefined;
  const models = () => (list ??= ModelList.open(cwd));

  rpc.on('models/info', async (p) => info(modelFolder(paths, p.dir)));
  rpc.on('models/cache', () => {
    const roots = hfCacheRoots();
    return { roots, models: scanHfCache(roots) };
  });
  // Datasets of the same cache (Open Dataset…): read only, like the model folders above.
  rpc.on('datasets/cache', async () => {
    const roots = hfCacheRoots();
    return { roots, datasets: await scanHfDatasets(roots) };
  });
  rpc.on('datasets/preview', async (p) => {
    const dir = modelFolder(paths, p.dir);
    if (p.split !== undefined && typeof p.split !== 'string') throw new InputError('a split name', { field: 'split' });
    try {
      return await previewDataset(dir, p.split);
    } catch (e) {
      throw new InputError((e as Error).message, { file: dir, field: p.split !== undefined ? 'split' : 'dir' });
    }
  });
  rpc.on('models/list', async () => (await models()).list());
  rpc.on('models/import', async (p) => {
    const i = await info(modelFolder(paths, p.dir));
    const m: ImportedModel = { ...i, name: modelName(i.dir), importedAt: Date.now() };
    await (await models()).put(m);
    return m;
  });
  rpc.on('models/remove', async (p) => {
    if (typeof p.dir !== 'string' || !p.dir) throw new InputError('a model folder is required', { field: 'dir' });
    return { removed: await (await models()).remove(p.dir) };
  });
  rpc.on('models/export', async (p, token) => {
    const checkpoint = paths.inside(p.checkpoint, 'checkpoint');
    const out = paths.inside(p.out, 'out');
    if (p.format !== 'hf' && p.format !== 'peft' && p.format !== 'gguf')
      throw new InputError(`must be hf, peft or gguf, got '${String(p.format)}'`, { field: 'format' });
    const dtype = p.dtype ?? 'f32';
    const force = p.force === true;
    checkExportOut(
      out,
      paths,
      (await (await RunRegistry.open(cwd)).list()).map((r) => r.dir),
    );
    // Refused here with the RPC's own way out; the CLI checks again (and keeps everything but its own files).
    checkExportTarget(out, { format: p.format, force, forceHint: 'force: true', source: checkpoint });
    const r = await runModelCommand(
      ['export', checkpoint, '--format', p.format, '--out', out, '--dtype', dtype, ...(force ? ['--force'] : [])],
      { cwd, token },
    );
    return { format: String(r.format), out: String(r.out), dtype: String(r.dtype) };
  });
}
