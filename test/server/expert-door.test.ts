// Add Selection as Expert: what the trainer cannot train on is refused at the door with a message
// naming the limit (the run's model max_seq_len, read from its newest checkpoint's config.json),
// and what is accepted is in the chat layout the explorer and the trainer use.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { makeBuffer, TOKENIZER } from '../../tools/make-buffer.js';
import { spawnServe, type Served } from '../../tools/spawn-serve.js';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import { saveTokenizer } from '../../backend/model/tokenizer/index.js';
import { encodePrompt, taskMessages } from '../../backend/model/chat.js';

let s: Served;
let bufferPath: string;
const MAX = 40;

before(async () => {
  bufferPath = await makeBuffer(20);
  const ckpt = join(dirname(bufferPath), 'checkpoints', 'v3');
  mkdirSync(ckpt, { recursive: true });
  saveTokenizer(TOKENIZER, ckpt);
  writeFileSync(
    join(ckpt, 'config.json'),
    JSON.stringify({ max_position_embeddings: MAX, vocab_size: TOKENIZER.vocabSize }),
  );
  const store = new SqliteStore(bufferPath);
  await store.addCheckpoint({ runId: 'run-a', version: 3, path: ckpt, checksum: 'x', createdAt: Date.now() });
  await store.close();
  s = spawnServe(['--workspace', tmpdir()]);
  await s.request('buffer/open', { path: bufferPath });
});
after(async () => {
  await s.close();
});

test('a prompt + response longer than the model max_seq_len is refused with the numbers; nothing is added', async () => {
  const before = (await s.request('buffer/counts', {})).expert;
  await assert.rejects(
    s.request('feedback/addExpert', {
      taskId: 't1',
      prompt: 'question 1',
      response: 'answer '.repeat(8),
      runId: 'run-a',
    }),
    (e: { code: number; message: string }) =>
      e.code === -32002 && /max_seq_len 40/.test(e.message) && /shorten it by \d+ tokens/.test(e.message),
  );
  assert.equal((await s.request('buffer/counts', {})).expert, before);
});

test('an expert that fits is stored in the chat layout (bos, turns, assistant marker; response + end marker)', async () => {
  const r = await s.request('feedback/addExpert', {
    taskId: 't1',
    prompt: 'question 1',
    response: 'answer 1',
    runId: 'run-a',
  });
  const e = (await s.request('buffer/get', { id: r.expertId }))!;
  assert.deepEqual(e.promptTokens, encodePrompt(TOKENIZER, taskMessages('question 1')));
  assert.equal(e.responseTokens.length, 'answer 1'.length + 1);
  assert.ok(e.promptTokens.length + e.responseTokens.length <= MAX);
});

test('promote with an edited response that does not fit is refused too', async () => {
  await assert.rejects(
    s.request('feedback/promote', { id: 'e00002', editedResponse: 'the answer is '.repeat(4) }),
    (e: { code: number; message: string }) => e.code === -32002 && /max_seq_len 40/.test(e.message),
  );
});

test('bulk preview counts exactly what bulk promote then promotes (top-1 per task, reward threshold), changing nothing', async () => {
  const before = (await s.request('buffer/counts', {})).expert;
  const filter = { runId: 'run-a', minReward: 0.5 };
  const p = await s.request('feedback/bulkPreview', { topK: 1, filter });
  assert.equal((await s.request('buffer/counts', {})).expert, before, 'a preview changes nothing');
  assert.ok(p.count > 0 && p.minReward! >= 0.5 && p.maxReward! <= 1);
  const r = await s.request('feedback/bulkPromote', { topK: 1, filter });
  assert.equal(r.count, p.count);
  assert.equal((await s.request('buffer/counts', {})).expert, before + p.count);
  await s.request('feedback/undo', { changeId: r.changeId });
  assert.equal((await s.request('buffer/counts', {})).expert, before, 'one undo reverts the batch');
});
