// A model folder as users have it: a plain folder, an HF-cache snapshot folder
// (models--org--name/snapshots/<rev>/, files are symlinks into ../../blobs), or the cache entry
// models--org--name itself (its refs/main snapshot). Weights: model.safetensors, or shards listed
// in model.safetensors.index.json. Only headers are read here.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve, sep } from 'node:path';
import { InputError } from '../../core/errors.js';
import { readSafetensorsHeader, type TensorEntry } from '../safetensors.js';
import { readRegularFile } from '../../core/regular-file.js';

export const INDEX_FILE = 'model.safetensors.index.json';
export const WEIGHTS_FILE = 'model.safetensors';

/** The folder that holds config.json: DIR itself, or the snapshot an HF cache entry points at. */
export function resolveModelDir(dir: string): string {
  if (!existsSync(dir)) throw new InputError('no such folder', { file: dir });
  if (!statSync(dir).isDirectory())
    throw new InputError('expected a model folder (config.json + safetensors)', { file: dir });
  if (existsSync(join(dir, 'config.json'))) return dir;
  const snaps = join(dir, 'snapshots');
  if (basename(dir).startsWith('models--') && existsSync(snaps)) {
    const ref = join(dir, 'refs', 'main');
    if (existsSync(ref)) {
      const rev = readFileSync(ref, 'utf8').trim();
      if (existsSync(join(snaps, rev, 'config.json'))) return join(snaps, rev);
    }
    const revs = readdirSync(snaps).filter((r) => existsSync(join(snaps, r, 'config.json')));
    if (revs.length === 1) return join(snaps, revs[0]!);
    throw new InputError(
      revs.length
        ? `several snapshots (${revs.join(', ')}) and no refs/main: give the snapshot folder`
        : 'no snapshot with a config.json',
      { file: snaps },
    );
  }
  return dir; // loadCheckpoint reports the missing config.json
}

/**
 * How another machine names the model in DIR (PEFT's base_model_name_or_path): `org/name` for a
 * Hugging Face cache entry (`.../models--org--name` or its `snapshots/<rev>`), which
 * `from_pretrained` finds in any cache or on the hub; else the folder's absolute path.
 */
export function modelSourceName(dir: string): string {
  const abs = resolve(dir);
  const parts = abs.split(sep);
  let at = parts.length - 1;
  while (at >= 0 && !parts[at]!.startsWith('models--')) at--;
  // The entry itself, or a snapshot inside it (snapshots/<rev>), never a folder further down.
  const tail = at < 0 ? [] : parts.slice(at + 1);
  if (at >= 0 && (tail.length === 0 || (tail.length === 2 && tail[0] === 'snapshots'))) {
    const name = parts[at]!.slice('models--'.length).split('--');
    if (name.length >= 1 && name.every(Boolean)) return name.join('/');
  }
  return abs;
}

/** Every tensor of the folder's safetensors file(s), from their headers; errors name the file and tensor. */
export function indexWeights(dir: string): { entries: Map<string, TensorEntry>; files: string[] } {
  const indexFile = join(dir, INDEX_FILE);
  const single = join(dir, WEIGHTS_FILE);
  const entries = new Map<string, TensorEntry>();
  if (existsSync(indexFile)) {
    let index: { weight_map?: unknown };
    try {
      index = JSON.parse(readRegularFile(indexFile, 'utf8')) as { weight_map?: unknown };
    } catch (e) {
      if (e instanceof InputError) throw e;
      throw new InputError(`not valid JSON (${(e as Error).message})`, { file: indexFile });
    }
    const map = index.weight_map;
    if (!map || typeof map !== 'object' || Array.isArray(map))
      throw new InputError('expected an object of tensor -> shard file', { file: indexFile, field: 'weight_map' });
    const byShard = new Map<string, string[]>();
    for (const [name, shard] of Object.entries(map as Record<string, unknown>)) {
      if (typeof shard !== 'string' || shard.includes('/') || shard.includes('\\') || !shard.endsWith('.safetensors'))
        throw new InputError(`expected a .safetensors file name in this folder, got ${JSON.stringify(shard)}`, {
          file: indexFile,
          field: `weight_map.${name}`,
        });
      byShard.set(shard, [...(byShard.get(shard) ?? []), name]);
    }
    for (const [shard, names] of byShard) {
      const file = join(dir, shard);
      if (!existsSync(file))
        throw new InputError(`shard ${shard} (listed for ${names[0]}) is missing`, {
          file: indexFile,
          field: `weight_map.${names[0]}`,
        });
      const { entries: inShard } = readSafetensorsHeader(file);
      for (const name of names) {
        const e = inShard.get(name);
        if (!e) throw new InputError(`tensor listed in ${INDEX_FILE} is not in this shard`, { file, field: name });
        entries.set(name, e);
      }
    }
    return { entries, files: [...byShard.keys()].map((s) => join(dir, s)) };
  }
  if (existsSync(single)) return { entries: readSafetensorsHeader(single).entries, files: [single] };
  const other = existsSync(dir) ? readdirSync(dir).filter((f) => /\.(bin|pt|pth|gguf)$/.test(f)) : [];
  throw new InputError(
    `no ${WEIGHTS_FILE} or ${INDEX_FILE}${other.length ? ` (found ${other.join(', ')}: only safetensors weights are read)` : ''}`,
    { file: single },
  );
}
