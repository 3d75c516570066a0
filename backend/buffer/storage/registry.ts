// Storages by URL scheme: a path or `sqlite:PATH` opens SQLite, `postgres://` / `postgresql://` opens PostgreSQL.
// Adding a storage is one file plus one entry in the map below.
import { InfrastructureError, InputError } from '../../core/errors.js';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from '../../core/registry.js';
import { PostgresStore } from './postgres.js';
import { SqliteStore } from './sqlite.js';
import type { ExperienceStore } from './types.js';

export type OpenStore = (url: string) => Promise<ExperienceStore>;
/** File name of the SQLite buffer inside a run folder. */
export const RUN_BUFFER_FILE = 'buffer.db';

const openSqlite: OpenStore = async (url) => {
  const rest = url.replace(/^sqlite:(\/\/)?/, '');
  const [path, query] = rest.split('?', 2) as [string, string | undefined];
  const sync = new URLSearchParams(query ?? '').get('synchronous')?.toLowerCase();
  if (sync !== undefined && sync !== 'full' && sync !== 'normal')
    throw new InputError(`sqlite url: synchronous must be full or normal, got '${sync}'`);
  try {
    return new SqliteStore(path, { synchronous: sync as 'full' | 'normal' | undefined });
  } catch (e) {
    // SQLite's own message ("database disk image is malformed") does not say which file.
    throw new InfrastructureError(`${path}: cannot open the buffer: ${(e as Error).message}`);
  }
};
const openPostgres: OpenStore = (url) => PostgresStore.open(url);

export const storages = new Registry<OpenStore>('storage', {
  sqlite: openSqlite,
  postgres: openPostgres,
  postgresql: openPostgres,
});

/** The scheme of a buffer URL; anything without `scheme://` (or `sqlite:`) is a SQLite file path. */
export function schemeOf(url: string): string {
  const m = /^([a-z][a-z0-9+.-]*):/i.exec(url);
  if (!m || /^[a-z]:[\\/]/i.test(url)) return 'sqlite'; // plain path (also a Windows drive letter)
  return m[1]!.toLowerCase();
}

/** A run folder means its buffer.db; anything else is taken as a URL or file path. */
export function resolveBufferUrl(runDirOrUrl: string): string {
  if (schemeOf(runDirOrUrl) === 'sqlite' && existsSync(runDirOrUrl) && statSync(runDirOrUrl).isDirectory())
    return join(runDirOrUrl, RUN_BUFFER_FILE);
  return runDirOrUrl;
}

export async function openStore(url: string): Promise<ExperienceStore> {
  const scheme = schemeOf(url);
  return storages.get(scheme)(scheme === 'sqlite' ? url.replace(/^sqlite:(\/\/)?/, '') : url);
}
