// The distributed explorer's weights source for the one explorer driver (explorer/explorer-loop.ts):
// the newest version the trainer recorded in the run's database, fetched from the recorded folder, the
// trainer's HTTP server or the run's S3 store and sha256-verified (weights-load.ts). With
// explorer.engine llama-cpp (or auto) the version is also handed to that engine, which then samples.
import type { RunConfig } from '../../core/config.js';
import { logger } from '../../core/log.js';
import type { JobQueue } from '../../buffer/queue/job-queue.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { makeRolloutEngine, type SyncedRolloutModel } from '../../explorer/rollout-engine.js';
import type { WeightsSource } from '../../explorer/explorer-loop.js';
import type { RolloutModel } from '../../explorer/workflow.js';
import { outsideHeapNote } from '../../model/external-weights.js';
import { ChecksumError } from './weights.js';
import type { HttpWeightsSource } from './weights-http.js';
import type { WeightsLoader } from './weights-load.js';

const log = logger('dist-explorer');

/** A published version as the queue records it. */
export interface RecordedVersion {
  version: number;
  path: string;
  checksum: string;
}

export class VerifiedWeights implements WeightsSource<RecordedVersion> {
  /** The loaded version's model (the driver's model is the engine where there is one). */
  local: LocalRolloutModel | null = null;
  /** explorer.engine llama-cpp: llama.cpp samples a GGUF of each loaded version; auto: per batch, llama.cpp or native. */
  private engine: SyncedRolloutModel | undefined;
  /** The loaded version's sha256 (provenance of every row it makes). */
  checksum = '';
  /** Versions loaded from the recorded folder (this host sees it), over HTTP from the trainer, from the S3 store. */
  readonly loads = { folder: 0, http: 0, s3: 0 };

  constructor(
    private readonly q: JobQueue,
    private readonly runId: string,
    private readonly cfg: RunConfig,
    private readonly loader: WeightsLoader,
    /** Where the S3 store is, for the log line (when the run has one). */
    private readonly storeWhere?: string,
    /** Called after each newest version is read (a database that answers again: the caller's backoff resets). */
    private readonly onLatest?: () => void,
  ) {}

  async latest(): Promise<RecordedVersion> {
    const latest = await this.q.latestVersion(this.runId);
    if (!latest) throw new Error(`run ${this.runId}: no published weights`);
    this.onLatest?.();
    return latest;
  }

  /** Loads and verifies a version; the previous version's weights are freed once these are in. */
  async load(latest: RecordedVersion): Promise<RolloutModel> {
    const http = await this.q.getState<HttpWeightsSource>(this.runId, 'dist:weights-http');
    const { ck, from } = await this.loader.load(latest, http);
    if (!ck.tokenizer) throw new ChecksumError(`${latest.path}: checkpoint has no tokenizer.json`);
    this.local?.model.dispose();
    this.local = new LocalRolloutModel(ck.model, ck.tokenizer, latest.version);
    if (this.cfg.explorer.engine !== 'native') {
      this.engine ??= makeRolloutEngine({
        engine: this.cfg.explorer.engine,
        workers: 1,
        llamaGpu: this.cfg.explorer.llama_cpp_gpu,
        config: ck.model.config,
        tokenizer: ck.tokenizer,
      });
      await this.engine?.setWeights(ck.model, latest.version);
    }
    this.checksum = latest.checksum;
    this.loads[from]++;
    const note = outsideHeapNote(ck.model); // loaded outside the wasm heap (weights-load.ts) when the addon allows
    log.debug(
      `v${latest.version} loaded from ${from === 'http' ? http!.url : from === 's3' ? this.storeWhere : latest.path}${note ? `, ${note}` : ''}`,
    );
    return this.engine ?? this.local;
  }

  async close(): Promise<void> {
    await this.engine?.close();
    this.local?.model.dispose();
    this.local = null;
    this.loader.dispose();
  }
}
