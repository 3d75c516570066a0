// Pair sampler (DPO): a batch of B rows is B/2 stored preference pairs, least-used first, laid out
// chosen, rejected, chosen, rejected... With a run id it first derives the run's pairs again
// (backend/buffer/pairs.ts), so curation done while the run trains reaches the next step. With a
// consumer and a step, the batch is recorded in run state and handed again for that step.
import { InputError } from '../../core/errors.js';
import { pairRows, syncPairs } from '../pairs.js';
import type { ExperienceStore } from '../storage/types.js';
import type { Sampler, SampleBatch, SampleRequest, SamplerConfig, WaitStatus } from './types.js';
import { blockingTake, describeWait } from './wait.js';

export class PairSampler implements Sampler {
  readonly name = 'pairs';
  constructor(
    private readonly store: ExperienceStore,
    private readonly cfg: SamplerConfig = { type: 'pairs' },
  ) {}

  async sample(req: SampleRequest): Promise<SampleBatch> {
    if (!Number.isInteger(req.batchSize) || req.batchSize < 2 || req.batchSize % 2 !== 0) {
      throw new InputError(
        `pair sampler: the batch size must be an even number of rows (2 per pair), got ${req.batchSize}`,
      );
    }
    const n = req.batchSize / 2;
    // A step's batch is recorded (run state) so a resumed trainer gets the same pairs for that step.
    const key =
      this.cfg.consumer !== undefined && req.step !== undefined ? `pairs-batch:${this.cfg.consumer}:${req.step}` : null;
    const runKey = this.cfg.runId ?? '';
    if (key) {
      const ids = await this.store.getState<string[]>(runKey, key);
      if (ids) {
        const rows = await this.store.getMany(ids);
        // Rows gone since (an undone promotion deleted an expert copy): take a fresh batch instead.
        if (rows.length === ids.length)
          return {
            experiences: rows,
            expertCount: rows.filter((e) => e.source === 'expert').length,
            replayed: true,
            waitedMs: 0,
          };
      }
    }
    const r = await blockingTake(
      req,
      async () => {
        if (this.cfg.runId !== undefined) await syncPairs(this.store, this.cfg.runId);
        const pairs = await this.store.takePairs({ n, runId: this.cfg.runId, maxUses: this.cfg.maxUses });
        return { experiences: (await pairRows(this.store, pairs)).rows, replayed: false };
      },
      async () => (await this.waitStatus(req.batchSize, req.currentVersion, true))!,
    );
    if (key)
      await this.store.setState(
        runKey,
        key,
        r.experiences.map((e) => e.id),
      );
    return {
      experiences: r.experiences,
      expertCount: r.experiences.filter((e) => e.source === 'expert').length,
      replayed: false,
      waitedMs: r.waitedMs,
    };
  }

  async waitStatus(rows: number, _currentVersion: number, always = false): Promise<WaitStatus | null> {
    const ready = (await this.store.listPairs({ runId: this.cfg.runId })).filter(
      (p) => this.cfg.maxUses === undefined || p.useCount < this.cfg.maxUses,
    ).length;
    const st = describeWait(this.name, rows / 2, { ready, stale: 0 }, null);
    return ready >= rows / 2 && !always
      ? null
      : { ...st, message: st.message.replace('experiences', 'preference pairs') };
  }
}
