// The run's database as a weights store for v0 (table rft_weight_files, 4 MiB chunks): the
// coordinator is not a server, yet the trainer may run on another machine, so the starting weights
// travel through what every process already reaches. One transaction per version: it is there whole
// or not at all. Later versions go the trainer's way (HTTP or S3), not through here.
import { createReadStream, createWriteStream, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import type pg from 'pg';
import { inTransaction } from '../../buffer/storage/pg-transaction.js';
import { WeightsFetchError } from './weights-http.js';
import type { WeightsStore } from './weights-store.js';

const CHUNK = 4 * 1024 * 1024;
const FILE = /^[A-Za-z0-9._-]+$/;

export class DbWeightsStore implements WeightsStore {
  readonly where = 'the run database (rft_weight_files)';

  constructor(private readonly pool: pg.Pool) {}

  async publish(runId: string, dir: string, checksum: string): Promise<void> {
    await inTransaction(this.pool, async (c) => {
      for (const name of readdirSync(dir)
        .filter((f) => FILE.test(f) && statSync(join(dir, f)).isFile())
        .sort()) {
        let part = 0;
        for await (const chunk of createReadStream(join(dir, name), { highWaterMark: CHUNK }))
          await c.query(
            'INSERT INTO rft_weight_files (run_id, sha256, name, part, data) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING',
            [runId, checksum, name, part++, chunk],
          );
        // An empty file still has its (empty) part 0, so the listing names it.
        if (part === 0)
          await c.query(
            'INSERT INTO rft_weight_files (run_id, sha256, name, part, data) VALUES ($1, $2, $3, 0, $4) ON CONFLICT DO NOTHING',
            [runId, checksum, name, Buffer.alloc(0)],
          );
      }
    });
  }

  async download(runId: string, checksum: string, into: string): Promise<void> {
    const files = (
      await this.pool.query(
        'SELECT name, count(*)::int AS parts FROM rft_weight_files WHERE run_id = $1 AND sha256 = $2 GROUP BY name ORDER BY name',
        [runId, checksum],
      )
    ).rows as { name: string; parts: number }[];
    if (!files.length)
      throw new WeightsFetchError(`${this.where}: no weights ${checksum.slice(0, 12)}… of run ${runId}`);
    for (const f of files) {
      if (!FILE.test(f.name)) throw new WeightsFetchError(`${this.where}: bad file name '${f.name}'`);
      const out = createWriteStream(join(into, f.name));
      // A chunk at a time: a large checkpoint never sits whole in memory.
      for (let part = 0; part < f.parts; part++) {
        const r = await this.pool.query(
          'SELECT data FROM rft_weight_files WHERE run_id = $1 AND sha256 = $2 AND name = $3 AND part = $4',
          [runId, checksum, f.name, part],
        );
        if (!r.rows.length) throw new WeightsFetchError(`${this.where}: ${f.name} part ${part} missing`);
        if (!out.write(r.rows[0].data as Buffer)) await new Promise<void>((res) => out.once('drain', () => res()));
      }
      out.end();
      await finished(out);
    }
  }

  async remove(runId: string, checksum: string): Promise<void> {
    await this.pool.query('DELETE FROM rft_weight_files WHERE run_id = $1 AND sha256 = $2', [runId, checksum]);
  }
}
