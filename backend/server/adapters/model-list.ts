// The workspace's imported models: `<workspace>/.rft/models.json` (lowdb; atomic writes). Only the
// server writes it; each change re-reads the file first so an edit by hand is not lost.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';
import type { ImportedModel } from '../../core/protocol.js';

interface ModelsFile {
  version: 1;
  models: ImportedModel[];
}

export class ModelList {
  private constructor(private readonly db: Low<ModelsFile>) {}

  static async open(workspace: string): Promise<ModelList> {
    const dir = join(workspace, '.rft');
    await mkdir(dir, { recursive: true });
    return new ModelList(
      new Low<ModelsFile>(new JSONFile<ModelsFile>(join(dir, 'models.json')), { version: 1, models: [] }),
    );
  }

  async list(): Promise<ImportedModel[]> {
    await this.db.read();
    return Array.isArray(this.db.data.models) ? this.db.data.models : [];
  }

  /** Adds or replaces (same folder) a model; newest first. */
  async put(m: ImportedModel): Promise<void> {
    const rest = (await this.list()).filter((x) => x.dir !== m.dir);
    this.db.data = { version: 1, models: [m, ...rest] };
    await this.db.write();
  }

  async remove(dir: string): Promise<boolean> {
    const all = await this.list();
    const rest = all.filter((x) => x.dir !== dir);
    if (rest.length === all.length) return false;
    this.db.data = { version: 1, models: rest };
    await this.db.write();
    return true;
  }
}
