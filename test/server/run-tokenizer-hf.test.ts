// The server's run tokenizer on a real model's checkpoint (Qwen3's tokenizer.json + tokenizer_config.json):
// curation (Edit, then promote; Add Selection as Expert) tokenises with it, and the token view shows
// the text of each token. Before, the checkpoint's tokenizer.json went to the project's own loader
// ("field 'model.continuing_subword_prefix': not supported") and the view showed ids only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import { loadTokenizer } from '../../backend/model/tokenizer/index.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../backend/model/chat.js';
import { RunTokenizers } from '../../backend/server/adapters/run-tokenizers.js';
import { StoreBuffer } from '../../backend/server/adapters/store-buffer.js';
import { StoreFeedback } from '../../backend/server/adapters/store-feedback.js';
import { tokenizerDir } from '../../tools/hf-model.js';
import type { Experience } from '../../backend/core/types.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'rft-srv-hf-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('a run whose checkpoint has the real Qwen tokenizer: token view text, edited promote and added expert tokenised by it', async () => {
  const ck = join(dir, 'run', 'checkpoints', 'v5');
  mkdirSync(ck, { recursive: true });
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(join(tokenizerDir('qwen3'), f), join(ck, f));
  writeFileSync(join(ck, 'config.json'), JSON.stringify({ max_position_embeddings: 4096, vocab_size: 151936 }));
  const qwen = loadTokenizer(ck);
  const bufferPath = join(dir, 'run', 'buffer.db');
  const store = new SqliteStore(bufferPath);
  try {
    await store.addCheckpoint({ runId: 'r', version: 5, path: ck, checksum: 'x', createdAt: 1 });
    const prompt = 'What is 6 * 7? Answer in full.';
    const response = 'It is 42 — forty-two 🙂';
    const promptTokens = encodePrompt(qwen, taskMessages(prompt));
    const responseTokens = encodeResponse(qwen, response);
    const e: Experience = {
      id: 'e1',
      taskId: 't1',
      groupId: 'g1',
      runId: 'r',
      source: 'usual',
      promptTokens,
      promptText: prompt,
      responseTokens,
      responseText: response,
      actionMask: responseTokens.map(() => 1),
      logprobs: responseTokens.map(() => -0.5),
      modelVersion: 5,
      reward: 1,
      status: 'ok',
      useCount: 0,
      createdAt: 1,
    };
    await store.appendExperiences([e]);

    const toks = new RunTokenizers(store, bufferPath);
    const tok = await toks.forRun('r');
    assert.equal(tok?.kind, 'hf');

    const detail = await new StoreBuffer(store, bufferPath, toks).get('e1');
    const pieces = (detail as { responsePieces?: string[] }).responsePieces;
    assert.ok(pieces, 'the token view has text per token');
    assert.equal(pieces.length, responseTokens.length);
    assert.equal(pieces.join(''), response + '<|im_end|>');
    assert.ok(
      pieces.some((p) => p.includes('🙂')),
      `the emoji whole on one token: ${JSON.stringify(pieces)}`,
    );
    assert.ok(!pieces.some((p) => /[ĠĊ\ufffd]/.test(p)), JSON.stringify(pieces));

    const fb = new StoreFeedback(store, toks);
    const edited = 'It is 42, i.e. six times seven.';
    const p = await fb.promote('e1', edited);
    const expert = (await store.get(p.expertId))!;
    assert.deepEqual(expert.responseTokens, encodeResponse(qwen, edited));
    assert.equal(qwen.decode(expert.responseTokens), edited + '<|im_end|>');

    const added = await fb.addExpert('t2', 'Name a prime.', 'Seven is prime.', 'r');
    const ex = (await store.get(added.expertId))!;
    assert.deepEqual(ex.promptTokens, encodePrompt(qwen, taskMessages('Name a prime.')));
    assert.match(
      qwen.decode(ex.promptTokens),
      /<\|im_start\|>user\nName a prime\.<\|im_end\|>\n<\|im_start\|>assistant\n/,
    );
    assert.deepEqual(ex.responseTokens, encodeResponse(qwen, 'Seven is prime.'));
  } finally {
    await store.close();
  }
  // `rft buffer show` prints the same text per token beside the ids.
  const r = spawnSync(process.execPath, [join(repo, 'bin', 'rft.mjs'), 'buffer', 'show', bufferPath, 'e1'], {
    cwd: repo,
    encoding: 'utf8',
    env: { ...process.env, RFT_FROM_SOURCE: '1' },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /--- tokens: id {2}mask {2}logprob {2}advantage {2}text/);
  assert.match(r.stdout, /"<\|im_end\|>"/);
  assert.ok(r.stdout.includes('🙂"'), r.stdout);
});
