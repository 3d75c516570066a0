// The tokenizer of a run, for re-tokenising edited expert responses and for showing per-token
// text: the newest checkpoint's tokenizer.json, else a tokenizer.json beside the buffer file.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ExperienceStore } from '../../buffer/storage/types.js';
import { loadTokenizer, TOKENIZER_FILE, type Tokenizer } from '../../model/tokenizer/index.js';

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
    const candidates = [ckpt && join(ckpt.path, TOKENIZER_FILE), existsSync(this.bufferPath) ? join(dirname(this.bufferPath), TOKENIZER_FILE) : undefined];
    for (const c of candidates) if (c && existsSync(c)) return loadTokenizer(c);
    return null;
  }

  /** Forget cached lookups (a new checkpoint was written). */
  clear(): void {
    this.cache.clear();
  }
}
