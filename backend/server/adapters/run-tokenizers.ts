// The tokenizer of a run, for re-tokenising edited expert responses and for showing per-token
// text: the newest checkpoint's tokenizer, else a tokenizer.json beside the buffer file, each
// loaded as every other reader loads it (loadTokenizer: an imported model's through
// @huggingface/tokenizers with its tokenizer_config.json and chat template).
import { existsSync } from 'node:fs';
import { readRegularFileAsync } from '../../core/regular-file.js';
import { dirname, join } from 'node:path';
import type { ExperienceStore } from '../../buffer/storage/types.js';
import { loadTokenizer, TOKENIZER_FILE, type Tokenizer } from '../../model/tokenizer/index.js';
import type { SequenceLimits } from '../../core/sequence-check.js';

export class RunTokenizers {
  private readonly cache = new Map<string, Promise<Tokenizer | null>>();

  constructor(
    private readonly store: ExperienceStore,
    private readonly bufferPath: string,
  ) {}

  forRun(runId: string): Promise<Tokenizer | null> {
    let p = this.cache.get(runId);
    if (!p) {
      p = this.find(runId);
      this.cache.set(runId, p);
    }
    return p;
  }

  private async find(runId: string): Promise<Tokenizer | null> {
    const ckpt = await this.store.latestCheckpoint(runId);
    const candidates = [
      ckpt && join(ckpt.path, TOKENIZER_FILE),
      existsSync(this.bufferPath) ? join(dirname(this.bufferPath), TOKENIZER_FILE) : undefined,
    ];
    for (const c of candidates) if (c && existsSync(c)) return loadTokenizer(c);
    return null;
  }

  /** The model's limits from the run's newest checkpoint (config.json): what an expert must fit. */
  async limitsFor(runId: string): Promise<SequenceLimits> {
    const ckpt = await this.store.latestCheckpoint(runId);
    const file = ckpt && join(ckpt.path, 'config.json');
    if (!file || !existsSync(file)) return {};
    try {
      const c = JSON.parse((await readRegularFileAsync(file)).toString('utf8')) as {
        max_position_embeddings?: unknown;
        vocab_size?: unknown;
      };
      const n = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined);
      return { maxSeqLen: n(c.max_position_embeddings), vocabSize: n(c.vocab_size) };
    } catch {
      return {};
    }
  }

  /** Forget cached lookups (a new checkpoint was written). */
  clear(): void {
    this.cache.clear();
  }
}
