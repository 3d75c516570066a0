// Buffer <-> JSONL (one Experience per line): how a buffer moves between SQLite and PostgreSQL.
// Import keeps every valid line and reports each bad one as FILE:LINE: field 'NAME': message.
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { InputError } from '../../core/errors.js';
import type { Experience } from '../../core/types.js';
import type { ExperienceStore } from './types.js';
import { parseExperience } from './validate.js';

export async function exportJsonl(store: ExperienceStore, file: string, filter?: (e: Experience) => boolean): Promise<number> {
  const out = createWriteStream(file, { encoding: 'utf8' });
  let n = 0;
  let after = 0;
  try {
    for (;;) {
      const page = await store.scan(after, 500);
      if (!page.length) break;
      after = page.at(-1)!.seq;
      for (const { experience } of page) {
        if (filter && !filter(experience)) continue;
        if (!out.write(JSON.stringify(experience) + '\n')) await once(out, 'drain');
        n++;
      }
    }
  } finally {
    out.end();
    await once(out, 'close');
  }
  return n;
}

export interface ImportResult {
  imported: number;
  duplicates: number;
  errors: InputError[];
}

export async function importJsonl(store: ExperienceStore, file: string, batchSize = 256): Promise<ImportResult> {
  const res: ImportResult = { imported: 0, duplicates: 0, errors: [] };
  let batch: Experience[] = [];
  const flush = async () => {
    if (!batch.length) return;
    const r = await store.appendExperiences(batch);
    res.imported += r.inserted;
    res.duplicates += r.duplicates.length;
    batch = [];
  };
  const rl = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  let line = 0;
  for await (const text of rl) {
    line++;
    if (!text.trim()) continue;
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (e) {
      res.errors.push(new InputError(`invalid JSON: ${(e as Error).message}`, { file, line }));
      continue;
    }
    try {
      batch.push(parseExperience(v, { file, line }));
    } catch (e) {
      if (e instanceof InputError) res.errors.push(e);
      else throw e;
      continue;
    }
    if (batch.length >= batchSize) await flush();
  }
  await flush();
  return res;
}
