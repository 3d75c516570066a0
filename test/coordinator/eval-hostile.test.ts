// Hostile evaluation inputs: a 1 MB prompt (was: Maximum call stack size exceeded in encodePrompt),
// a prompt longer than max_seq_len (was: the whole evaluation aborted without naming the task), an
// all-invalid taskset (was: accuracy 0 with n 0), and a malformed buffer.db (was: no file named).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Task } from '../../backend/core/types.js';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { saveCheckpoint } from '../../backend/model/checkpoint.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { encodePrompt, taskMessages } from '../../backend/model/chat.js';
import { LocalRolloutModel } from '../../backend/explorer/local-model.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';
import { evaluate } from '../../backend/coordinator/evaluate.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { makeBuffer } from '../../tools/make-buffer.js';

await initEngine();
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const tok = CharTokenizer.fromAlphabet('abc 0123456789');
const model = new Transformer(
  makeConfig({ vocabSize: tok.vocabSize, dModel: 16, nLayers: 1, nHeads: 2, nKvHeads: 2, dFF: 32, maxSeqLen: 32 }),
  3,
);
const task = (id: string, prompt: string): Task => ({ id, taskset: 't', domain: 'text', prompt, answer: 'a' });

test('a 1 MB prompt encodes (no call-stack overflow)', () => {
  const ids = encodePrompt(tok, taskMessages('a'.repeat(1 << 20)));
  assert.equal(ids.length, (1 << 20) + 4);
});

test('a prompt longer than max_seq_len is left out by name; the others are evaluated', async () => {
  const warnings: string[] = [];
  // The warning is what this test checks: logged at level warn whatever the runner's RFT_LOG_LEVEL.
  const level = process.env.RFT_LOG_LEVEL;
  process.env.RFT_LOG_LEVEL = 'warn';
  const orig = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((s: string) => (warnings.push(String(s)), true)) as typeof process.stderr.write;
  let r;
  try {
    r = await evaluate(
      new LocalRolloutModel(model, tok, 1),
      [
        task('short-1', 'ab'),
        task('huge', 'a'.repeat(1 << 20)),
        task('long', 'abc '.repeat(20)),
        task('short-2', 'ba'),
      ],
      rewardFns.get('exact_match'),
      { maxNewTokens: 4 },
    );
  } finally {
    process.stderr.write = orig;
    if (level === undefined) delete process.env.RFT_LOG_LEVEL;
    else process.env.RFT_LOG_LEVEL = level;
  }
  assert.equal(r.n, 2, 'the two short tasks are scored');
  assert.equal(r.infra_failures, 2);
  assert.ok(
    warnings.some((w) => /eval task 'huge': its prompt of 1048580 tokens leaves no room in max_seq_len 32/.test(w)),
    warnings.join(''),
  );
  assert.ok(warnings.some((w) => /eval task 'long'/.test(w)));
});

test('rft eval of an all-invalid taskset says there is nothing to evaluate (not accuracy 0 of 0)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-eval-hostile-'));
  await saveCheckpoint(model, join(dir, 'ck'), { version: 1 }, tok);
  const file = join(dir, 'bad.jsonl');
  writeFileSync(file, '{"id": 1}\nnot json\n');
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'backend/cli.ts'),
      'eval',
      join(dir, 'ck'),
      '--taskset',
      file,
      '--reward',
      'exact_match',
    ],
    { cwd: ROOT, encoding: 'utf8', timeout: 120_000 },
  );
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /bad\.jsonl: no valid task to evaluate/);
  assert.equal(r.stdout.trim(), '', 'no accuracy printed');
});

test('a malformed buffer.db names its file', async () => {
  const p = await makeBuffer(200);
  const b = readFileSync(p);
  b.fill(0x41, 4096);
  writeFileSync(p, b);
  await assert.rejects(
    openStore(p),
    (e: Error) => e.message === `${p}: cannot open the buffer: database disk image is malformed`,
  );
  const q = await makeBuffer(5);
  writeFileSync(q, 'text, not a database '.repeat(300));
  await assert.rejects(
    openStore(q),
    (e: Error) => e.message === `${q}: cannot open the buffer: file is not a database`,
  );
});
