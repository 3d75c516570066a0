// Buffer <-> JSONL (one Experience per line): how a buffer moves between SQLite and PostgreSQL.
// Import keeps every valid line and reports each bad one as FILE:LINE: field 'NAME': message.
import { createReadStream, createWriteStream } from 'node:fs';
import { openRegularFile } from '../../core/regular-file.js';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { InputError } from '../../core/errors.js';
import type { Experience } from '../../core/types.js';
import type { ExperienceStore } from './types.js';
import { parseExperience } from './validate.js';

/** Every row of a store (of one run, when given), in sequence order, a page at a time. */
export async function* scanRows(store: ExperienceStore, runId?: string): AsyncGenerator<Experience> {
  let after = 0;
  for (;;) {
    const page = await store.scan(after, 500, runId);
    if (!page.length) return;
    after = page.at(-1)!.seq;
    for (const { experience } of page) yield experience;
  }
}

export async function exportJsonl(
  store: ExperienceStore,
  file: string,
  filter?: (e: Experience) => boolean,
): Promise<number> {
  const out = createWriteStream(file, { encoding: 'utf8' });
  let n = 0;
  try {
    for await (const experience of scanRows(store)) {
      if (filter && !filter(experience)) continue;
      if (!out.write(JSON.stringify(experience) + '\n')) await once(out, 'drain');
      n++;
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

/** Each line of a JSONL export: its experience, or the InputError naming its file and line (blank lines skipped). */
export async function* readJsonlExperiences(file: string): AsyncGenerator<Experience | InputError> {
  // A FIFO or a device is refused by name (it would be read without end); the stream reads the checked fd.
  const fd = openRegularFile(file);
  const rl = createInterface({ input: createReadStream(file, { fd, encoding: 'utf8' }), crlfDelay: Infinity });
  let line = 0;
  for await (const text of rl) {
    line++;
    if (!text.trim()) continue;
    let row: Experience | InputError;
    try {
      row = parseExperience(JSON.parse(text), { file, line });
    } catch (e) {
      if (e instanceof SyntaxError) row = new InputError(`invalid JSON: ${e.message}`, { file, line });
      else if (e instanceof InputError) row = e;
      else throw e;
    }
    yield row;
  }
}

/** Appends experiences to a store in batches, counting rows inserted and rows it held already. */
export class BatchAppender {
  inserted = 0;
  duplicates = 0;
  private batch: Experience[] = [];

  constructor(
    private readonly store: ExperienceStore,
    private readonly size = 256,
  ) {}

  async push(e: Experience): Promise<void> {
    this.batch.push(e);
    if (this.batch.length >= this.size) await this.flush();
  }

  async flush(): Promise<void> {
    if (!this.batch.length) return;
    const r = await this.store.appendExperiences(this.batch);
    this.inserted += r.inserted;
    this.duplicates += r.duplicates.length;
    this.batch = [];
  }
}

export async function importJsonl(store: ExperienceStore, file: string, batchSize = 256): Promise<ImportResult> {
  const errors: InputError[] = [];
  const out = new BatchAppender(store, batchSize);
  for await (const row of readJsonlExperiences(file)) {
    if (row instanceof InputError) errors.push(row);
    else await out.push(row);
  }
  await out.flush();
  return { imported: out.inserted, duplicates: out.duplicates, errors };
}
