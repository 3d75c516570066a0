// The Hugging Face cache folders huggingface_hub uses (HF_HUB_CACHE, else HF_HOME/hub, else
// ~/.cache/huggingface/hub) and the model snapshots in them: models--org--name/snapshots/<rev>/
// with a config.json. Only names are read here; `rft model info` checks the model itself.
import { existsSync, readdirSync } from 'node:fs';
import { readRegularFile } from '../../core/regular-file.js';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { CachedModel } from '../../core/protocol.js';

export function hfCacheRoots(env: NodeJS.ProcessEnv = process.env, home = homedir()): string[] {
  const roots = [
    env.HF_HUB_CACHE,
    env.HUGGINGFACE_HUB_CACHE,
    env.HF_HOME ? join(env.HF_HOME, 'hub') : undefined,
    join(home, '.cache', 'huggingface', 'hub'),
  ];
  return [...new Set(roots.filter((r): r is string => !!r))];
}

/** Every snapshot with a config.json, the one refs/main names first within an entry. */
export function scanHfCache(roots: string[]): CachedModel[] {
  const out: CachedModel[] = [];
  for (const root of roots) {
    let entries: string[];
    try {
      entries = readdirSync(root)
        .filter((e) => e.startsWith('models--'))
        .sort();
    } catch {
      continue; // no cache there
    }
    for (const e of entries) {
      const repo = e.slice('models--'.length).split('--').join('/');
      const snaps = join(root, e, 'snapshots');
      let revs: string[];
      try {
        revs = readdirSync(snaps).filter((r) => existsSync(join(snaps, r, 'config.json')));
      } catch {
        continue;
      }
      let main: string | undefined;
      try {
        main = readRegularFile(join(root, e, 'refs', 'main'), 'utf8', 4096).trim();
      } catch {
        main = undefined;
      }
      revs.sort((a, b) => Number(b === main) - Number(a === main));
      for (const revision of revs) out.push({ repo, revision, dir: join(snaps, revision) });
    }
  }
  return out;
}
