// Rollout workers each copy the weights into their own 4 GiB wasm heap: a model too big for that is
// refused when the run starts, naming the setting, instead of aborting a worker at its first sync.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeConfig, presetConfig } from '../../backend/model/config.js';
import { workerPool } from '../../backend/explorer/rollout-engine.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';

const tok = CharTokenizer.train(['abc']);
// Llama-3.2-1B's shape (1.24B parameters, 4.6 GiB in f32); no weights are made.
const llama1b = makeConfig({
  vocabSize: 128256,
  dModel: 2048,
  nLayers: 16,
  nHeads: 32,
  nKvHeads: 8,
  dFF: 8192,
  maxSeqLen: 512,
  tieEmbeddings: true,
});

test('explorer.workers > 1 with a 1B model is refused at its path with the way out', () => {
  assert.throws(
    () => workerPool({ workers: 2, config: llama1b, tokenizer: tok }),
    /^Error: explorer\.workers: 2 rollout workers each hold an in-heap copy .* 4\.6 GiB .* set explorer\.workers: 1/,
  );
});

test('an overlapping memory explorer (one worker) with a 1B model is refused, naming the synchronizer', () => {
  assert.throws(
    () => workerPool({ workers: 1, config: llama1b, tokenizer: tok, overlap: true }),
    /^Error: synchronizer: .* 4\.6 GiB .* placement: checkpoint for one_step_off/,
  );
});

test('a model that fits gets its pool', async () => {
  const pool = workerPool({ workers: 2, config: presetConfig('tiny-0.4m', tok.vocabSize), tokenizer: tok });
  await pool.close();
});
