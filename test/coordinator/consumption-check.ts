// What the async tests read back from a finished run: its metrics records, and the trainer's
// consumption records checked against the staleness bound.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '../../backend/buffer/storage/index.js';

export type Rec = Record<string, unknown>;

export const records = (runDir: string): Rec[] =>
  readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Rec);

/**
 * Usual experiences trained at steps [from, to): at least one a step (at most `maxRows` when given),
 * each within `bound` versions, none twice; the versions seen.
 */
export async function checkConsumption(
  runDir: string,
  runId: string,
  from: number,
  to: number,
  bound: number,
  maxRows?: number,
): Promise<Set<number>> {
  const store = await openStore(join(runDir, 'buffer.db'));
  const versions = new Set<number>();
  const seen = new Set<string>();
  try {
    for (let t = from; t < to; t++) {
      const exps = (await store.getMany(await store.consumed('trainer', t, runId))).filter((e) => e.source === 'usual');
      assert.ok(
        exps.length >= 1 && (maxRows === undefined || exps.length <= maxRows),
        `step ${t}: ${exps.length} usual experiences trained (want 1${maxRows === undefined ? ' or more' : `..${maxRows}`})`,
      );
      for (const e of exps) {
        assert.ok(e.modelVersion <= t, `step ${t}: experience from the future v${e.modelVersion}`);
        assert.ok(e.modelVersion >= t - bound, `step ${t}: v${e.modelVersion} is more than ${bound} versions old`);
        assert.ok(!seen.has(e.id), `${e.id} trained twice`);
        seen.add(e.id);
        versions.add(e.modelVersion);
      }
    }
  } finally {
    await store.close();
  }
  return versions;
}
