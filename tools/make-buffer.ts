// Builds a real SQLite buffer filled with deterministic experiences for the server / extension tests.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Experience } from '../backend/core/types.js';
import { SqliteStore } from '../backend/buffer/storage/index.js';
import { CharTokenizer, saveTokenizer, type Tokenizer } from '../backend/model/tokenizer/index.js';

/** The buffer's run tokenizer: characters of the test texts (saved as tokenizer.json beside the buffer). */
export const TOKENIZER: Tokenizer = CharTokenizer.train(
  ['question answer 0123456789 expert edited response the. ,!?-'],
  {},
);

export function experience(i: number, o: Partial<Experience> = {}): Experience {
  const task = `t${i % 5}`;
  const group = `g${Math.floor(i / 4)}`;
  const resp = `answer ${i}`;
  const tokens = TOKENIZER.encode(resp);
  return {
    id: `e${String(i).padStart(5, '0')}`,
    taskId: task,
    groupId: group,
    runId: i % 2 ? 'run-b' : 'run-a',
    source: 'usual',
    promptTokens: TOKENIZER.encode(`question ${i % 5}`),
    promptText: `question ${i % 5}`,
    responseTokens: tokens,
    responseText: resp,
    actionMask: tokens.map(() => 1),
    logprobs: tokens.map((_, k) => -0.1 * (k + 1)),
    advantages: tokens.map(() => (i % 4) - 1.5),
    modelVersion: i % 3,
    reward: (i % 10) / 10,
    status: i % 17 === 16 ? 'infra_failure' : 'ok',
    useCount: 0,
    createdAt: 1_700_000_000_000 + i,
    ...o,
  };
}

/** A buffer file with `n` usual experiences; returns its path (the store is closed). */
export async function makeBuffer(n: number, dir = mkdtempSync(join(tmpdir(), 'rft-buf-'))): Promise<string> {
  const path = join(dir, 'buffer.db');
  saveTokenizer(TOKENIZER, dir);
  const store = new SqliteStore(path);
  const batch: Experience[] = [];
  for (let i = 0; i < n; i++) batch.push(experience(i));
  for (let i = 0; i < batch.length; i += 500) await store.appendExperiences(batch.slice(i, i + 500));
  await store.close();
  return path;
}
