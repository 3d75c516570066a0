// The serve endpoint's limits under load and abuse, with the real `openai` client and a real model:
// over the concurrent-request limit a call gets 429 and the others are answered; a call answered 504
// past the request timeout is never recorded into its episode (the client never saw that reply);
// the closed-episode memory is bounded; and the server keeps serving after each.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { initEngine } from '../../../backend/model/engine.js';
import { loadCheckpoint } from '../../../backend/model/checkpoint.js';
import { openStore } from '../../../backend/buffer/storage/index.js';
import { LocalRolloutModel } from '../../../backend/explorer/local-model.js';
import type { RolloutGeneration, RolloutModel } from '../../../backend/explorer/workflow.js';
import type { GenerateOptions } from '../../../backend/model/generate.js';
import { PolicyGate } from '../../../backend/explorer/openai-server/policy.js';
import { EpisodeBook } from '../../../backend/explorer/openai-server/episodes.js';
import { startOpenAIServer } from '../../../backend/explorer/openai-server/http.js';
import { makeHfModel } from '../../../tools/hf-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-openai-limits-'));
const ck = loadCheckpoint(
  makeHfModel(join(root, 'qwen'), {
    architecture: 'Qwen2ForCausalLM',
    tokenizer: 'qwen3',
    hidden: 16,
    layers: 1,
    heads: 2,
    kvHeads: 1,
    intermediate: 24,
    tied: true,
    seed: 5,
  }),
);

/** The real model, whose next generate can be held at its start (to have a request in flight). */
class Holdable implements RolloutModel {
  private gate: { entered: () => void; go: Promise<void> } | undefined;
  constructor(private readonly inner: LocalRolloutModel) {}
  get version() {
    return this.inner.version;
  }
  get tokenizer() {
    return this.inner.tokenizer;
  }
  get maxSeqLen() {
    return this.inner.maxSeqLen;
  }
  /** The next generate waits for the returned `go()`; `entered` resolves when it started. */
  holdNext(): { entered: Promise<void>; go: () => void } {
    let entered!: () => void;
    let go!: () => void;
    const e = new Promise<void>((r) => (entered = r));
    this.gate = { entered, go: new Promise<void>((r) => (go = r)) };
    return { entered: e, go };
  }
  async generate(prompts: number[][], opts: GenerateOptions): Promise<RolloutGeneration[]> {
    const g = this.gate;
    this.gate = undefined;
    if (g) {
      g.entered();
      await g.go;
    }
    return this.inner.generate(prompts, opts);
  }
}

const model = new Holdable(new LocalRolloutModel(ck.model, ck.tokenizer!, 2));
// No transformer: requests sample through the rollout model's generate, which Holdable can hold (the
// shared continuous batch, taken when the native step can decode this Qwen2, would bypass it).
const gate = new PolicyGate({ model }, 'tiny');
const store = await openStore(join(root, 'buffer.db'));
const book = new EpisodeBook({
  runId: 'limits',
  sink: async (exps) => {
    await store.appendExperiences(exps);
  },
  rewardTimeoutMs: 3_600_000,
  closedLimit: 3,
});
const TOKEN = 'tok-limits';
const limits = { maxTokens: 4, maxConcurrent: 1 };
const srv = await startOpenAIServer({ gate, token: TOKEN, episodes: book, limits });
// The same policy and episodes behind a 1 ms request timeout: any call that waits is answered 504.
const hasty = await startOpenAIServer({
  gate,
  token: TOKEN,
  episodes: book,
  limits: { ...limits, maxConcurrent: 4, requestTimeoutMs: 1 },
});
const client = new OpenAI({ baseURL: srv.baseURL, apiKey: TOKEN, maxRetries: 0 });
const hastyClient = new OpenAI({ baseURL: hasty.baseURL, apiKey: TOKEN, maxRetries: 0 });
after(async () => {
  await srv.close();
  await hasty.close();
  await store.close();
  ck.model.dispose();
  rmSync(root, { recursive: true, force: true });
});

const ask = (episode_id?: string, content = 'What is 2 + 2?') => ({
  model: 'tiny',
  messages: [{ role: 'user' as const, content }],
  max_tokens: 3,
  ...(episode_id ? { metadata: { episode_id } } : {}),
});

test('over the concurrent-request limit a call gets 429 (rate_limit_error); the one in flight and later ones are answered', async () => {
  const h = model.holdNext();
  const first = client.chat.completions.create(ask());
  await h.entered;
  await assert.rejects(
    client.chat.completions.create(ask()),
    (e: unknown) => e instanceof OpenAI.RateLimitError && e.code === 'too_many_requests',
  );
  h.go();
  assert.equal((await first).system_fingerprint, 'v2');
  assert.equal((await client.chat.completions.create(ask())).choices.length, 1);
});

test('a call answered 504 past the request timeout is not recorded into its episode, only counted', async () => {
  // An episode with one answered call, then a continuation that times out.
  const a = await client.chat.completions.create(ask('ep-keep'));
  const h = model.holdNext();
  const late = hastyClient.chat.completions.create({
    ...ask('ep-keep'),
    messages: [
      { role: 'user', content: 'What is 2 + 2?' },
      a.choices[0]!.message as OpenAI.ChatCompletionMessageParam,
      { role: 'user', content: 'And 3 + 3?' },
    ],
  });
  await h.entered;
  await assert.rejects(late, (e: unknown) => e instanceof OpenAI.APIError && e.status === 504);
  // A new episode whose only call timed out.
  const h2 = model.holdNext();
  const lone = hastyClient.chat.completions.create(ask('ep-lone'));
  const expiredBefore = book.stats.expired;
  h.go();
  await h2.entered;
  await assert.rejects(lone, (e: unknown) => e instanceof OpenAI.APIError && e.status === 504);
  h2.go();
  // The sampling goes on after the 504 (its slot is held until then): wait until it is over.
  while (book.stats.expired < expiredBefore + 2 && !book.get('ep-lone')) await new Promise((r) => setTimeout(r, 20));
  assert.equal(book.get('ep-lone'), undefined, 'a timed-out call opened no episode');
  assert.equal(book.stats.expired, expiredBefore + 2);
  const kept = book.get('ep-keep')!;
  assert.equal(kept.branches.length, 1);
  assert.equal(kept.branches[0]!.calls, 1, 'the timed-out continuation is not in the episode');
  const r = (await client.post('/rft/rewards', {
    body: {
      rewards: [
        { episode_id: 'ep-lone', reward: 1 },
        { episode_id: 'ep-keep', reward: 1 },
      ],
    },
  })) as { results: { status: string; reason?: string }[] };
  assert.equal(r.results[0]!.reason, 'unknown episode id');
  assert.equal(r.results[1]!.status, 'accepted');
  const rows = await store.list({ runId: 'limits' });
  const kept1 = rows.find((e) => e.metadata?.episode_id === 'ep-keep')!;
  assert.equal(kept1.metadata!.calls, 1);
  assert.ok(!rows.some((e) => e.metadata?.episode_id === 'ep-lone'));
});

test('closed episode ids are remembered up to the limit, oldest forgotten first', async () => {
  for (const id of ['c1', 'c2', 'c3', 'c4', 'c5']) {
    await client.chat.completions.create(ask(id, `question ${id}`));
    await client.post('/rft/rewards', { body: { rewards: [{ episode_id: id, reward: 0.5 }] } });
  }
  assert.equal(book.closedCount, 3);
  const r = (await client.post('/rft/rewards', {
    body: {
      rewards: [
        { episode_id: 'c5', reward: 1 },
        { episode_id: 'c1', reward: 1 },
      ],
    },
  })) as { results: { reason?: string }[] };
  assert.equal(r.results[0]!.reason, 'already rewarded');
  assert.equal(r.results[1]!.reason, 'unknown episode id', 'c1 was forgotten, as documented');
  await assert.rejects(
    client.chat.completions.create(ask('c4')),
    (e: unknown) => e instanceof OpenAI.BadRequestError && e.code === 'episode_closed',
  );
});

test('a body over the size limit sent without a length (chunked) gets 413 request_too_large, not a reset connection', async () => {
  const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
  let sent = 0;
  // 4 MiB + 64 KiB in chunks: over the default limit, with no content-length to refuse it up front.
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent++ < 65) c.enqueue(chunk);
      else c.close();
    },
  });
  const r = await fetch(`${srv.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body,
    duplex: 'half',
  } as RequestInit);
  assert.equal(r.status, 413);
  const e = ((await r.json()) as { error: { code: string; type: string } }).error;
  assert.equal(e.code, 'request_too_large');
  assert.equal(e.type, 'invalid_request_error');
  assert.equal((await client.chat.completions.create(ask())).choices.length, 1, 'still serving');
});

test('bodies that are JSON but not a request object get 400 naming what is wrong', async () => {
  for (const body of ['null', '[]', '"hi"', '{"messages": "hi"}', '{"messages": [{"role": "user", "content": 7}]}']) {
    const r = await fetch(`${srv.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body,
    });
    assert.equal(r.status, 400, body);
    const e = ((await r.json()) as { error: { message: string; type: string } }).error;
    assert.equal(e.type, 'invalid_request_error', body);
    assert.ok(e.message.length > 0);
  }
});

test('a second call of an episode still being answered gets 409 episode_busy (its first call too), and its reward waits; n over 128 is refused', async () => {
  // The first call of a new episode: the episode exists only once it is answered, yet is taken.
  const h0 = model.holdNext();
  const opening = client.chat.completions.create(ask('ep-new'));
  await h0.entered;
  await assert.rejects(
    hastyClient.chat.completions.create(ask('ep-new')),
    (e: unknown) => e instanceof OpenAI.ConflictError && e.code === 'episode_busy',
  );
  const r0 = (await hastyClient.post('/rft/rewards', {
    body: { rewards: [{ episode_id: 'ep-new', reward: 1 }] },
  })) as { results: { reason?: string }[] };
  assert.equal(r0.results[0]!.reason, 'a call of this episode is still being answered');
  h0.go();
  await opening;
  assert.equal(book.get('ep-new')!.branches.length, 1);
  // A later call of the open episode.
  const h = model.holdNext();
  const first = client.chat.completions.create(ask('ep-new', 'Another question.'));
  await h.entered;
  // The concurrent limit is 1 on srv: the second call goes through the other server, same episodes.
  await assert.rejects(
    hastyClient.chat.completions.create(ask('ep-new')),
    (e: unknown) => e instanceof OpenAI.ConflictError && e.code === 'episode_busy',
  );
  const r = (await hastyClient.post('/rft/rewards', {
    body: { rewards: [{ episode_id: 'ep-new', reward: 1 }] },
  })) as { results: { reason?: string }[] };
  assert.equal(r.results[0]!.reason, 'a call of this episode is still being answered');
  h.go();
  await first;
  assert.equal(book.get('ep-new')!.branches.length, 2, 'the refused calls left no trace');
  await assert.rejects(
    client.chat.completions.create({ ...ask(), n: 129 }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === 'n',
  );
});

test('an idle keep-alive connection survives a busy event loop (a weight switch loading a checkpoint): the request sent on it is answered', async () => {
  const { connect } = await import('node:net');
  const u = new URL(srv.baseURL);
  const sock = connect(Number(u.port), u.hostname);
  await new Promise((r) => sock.once('connect', r));
  let got = '';
  sock.on('data', (b: Buffer) => (got += b.toString('utf8')));
  // A reset connection is what the assertion below reports, not an error event.
  sock.on('error', () => undefined);
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  const get = `GET /v1/models HTTP/1.1\r\nhost: ${u.host}\r\nauthorization: Bearer ${TOKEN}\r\n\r\n`;
  const answers = () => got.split('HTTP/1.1 200').length - 1;
  sock.write(get);
  while (answers() < 1) await new Promise((r) => setTimeout(r, 10));
  // The client sends on the idle connection, then this process (the server's) is busy for 6 s, past
  // Node's default keep-alive timeout of 5 s.
  sock.write(get);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 6000);
  const answered = new Promise<void>((r) => {
    const check = () => (answers() >= 2 ? r() : setTimeout(check, 10));
    check();
  });
  await Promise.race([answered, closed]);
  assert.equal(answers(), 2, `the second request met a closed connection:\n${got}`);
  sock.destroy();
});
