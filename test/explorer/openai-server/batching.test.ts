// Continuous batching and live streaming of the OpenAI surface, with the real `openai` npm client:
// concurrent requests decode together and each gets its lone decode's greedy tokens; a request that
// arrives mid-decode joins the running batch; per-request max_tokens / stop / seed; log-probs against
// a full forward; a weight switch never mixes versions; a stream's first chunk is written after its
// first token; a client that disconnects frees its row. Needs the native decode (skipped otherwise).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { initEngine, tf } from '../../../backend/model/engine.js';
import { loadCheckpoint } from '../../../backend/model/checkpoint.js';
import { generate } from '../../../backend/model/generate.js';
import { stopTokens } from '../../../backend/model/chat.js';
import { LocalRolloutModel } from '../../../backend/explorer/local-model.js';
import { PolicyGate } from '../../../backend/explorer/openai-server/policy.js';
import { startOpenAIServer } from '../../../backend/explorer/openai-server/http.js';
import { renderPrompt } from '../../../backend/explorer/openai-server/render.js';
import { batchable } from '../../../backend/explorer/openai-server/batcher.js';
import { makeHfModel } from '../../../tools/hf-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-openai-batching-'));
const ck = loadCheckpoint(
  makeHfModel(join(root, 'llama'), {
    architecture: 'LlamaForCausalLM',
    tokenizer: 'llama3',
    hidden: 32,
    layers: 2,
    heads: 4,
    kvHeads: 2,
    intermediate: 64,
    tied: true,
    seed: 11,
  }),
);
const model = ck.model;
const tok = ck.tokenizer!;
const TOKEN = 'batch-token-1234';
const gate = new PolicyGate({ model: new LocalRolloutModel(model, tok, 0), transformer: model }, 'tiny-llama');
const srv = await startOpenAIServer({ gate, token: TOKEN, limits: { maxTokens: 256 } });
const client = new OpenAI({ baseURL: srv.baseURL, apiKey: TOKEN, maxRetries: 0 });
const stats = gate.batcher.stats;
after(async () => {
  await srv.close();
  model.dispose();
  rmSync(root, { recursive: true, force: true });
});
const skip = batchable(model) ? false : 'the native decode is not available (RFT_NATIVE_BLAS=0 or no addon)';

type Msg = { role: 'user' | 'system'; content: string };
const ask = (q: string): Msg[] => [{ role: 'user', content: q }];
const QUESTIONS = [
  'Hi',
  'What is 6 * 7?',
  'Name a colour.',
  'Tell me a long story about a cat and a dog.',
  'x',
  'Why?',
];

/** The greedy decode of MESSAGES alone (batch of one, no padding), through the project's generate. */
async function lone(messages: Msg[], maxTokens: number) {
  const prompt = renderPrompt(tok, messages, undefined);
  const [g] = await generate(model, tok, [prompt], {
    maxNewTokens: maxTokens,
    temperature: 0,
    stopTokens: stopTokens(tok),
  });
  const stops = stopTokens(tok);
  const visible = g!.tokens.filter((t, i) => !(i === g!.tokens.length - 1 && stops.includes(t)));
  return { ...g!, visible, content: tok.decode(visible, { skipSpecial: true }) };
}

function assertSameAsLone(r: OpenAI.ChatCompletion, l: Awaited<ReturnType<typeof lone>>, what: string) {
  const c = r.choices[0]!;
  assert.equal(c.message.content, l.content, `${what}: content`);
  assert.equal(r.usage!.completion_tokens, l.tokens.length, `${what}: completion tokens`);
  const lp = c.logprobs!.content!;
  assert.deepEqual(
    lp.map((x) => x.token),
    l.visible.map((t) => tok.decode([t])),
    `${what}: tokens`,
  );
  lp.forEach((x, i) => assert.ok(Math.abs(x.logprob - l.logprobs[i]!) < 1e-4, `${what}: logprob ${i}`));
}

test(
  'concurrent greedy requests decode in one batch, each with the tokens and log-probs of its lone decode',
  { skip },
  async () => {
    const maxes = [40, 7, 25, 64, 3, 18];
    const expected = await Promise.all(QUESTIONS.map((q, i) => lone(ask(q), maxes[i]!)));
    assert.ok(
      expected.some((e) => e.tokens.length > 20),
      'some reply runs long enough to overlap the others',
    );
    stats.peakLive = 0;
    const got = await Promise.all(
      QUESTIONS.map((q, i) =>
        client.chat.completions.create({
          messages: ask(q),
          model: 'tiny-llama',
          temperature: 0,
          max_tokens: maxes[i],
          logprobs: true,
        }),
      ),
    );
    got.forEach((r, i) => assertSameAsLone(r, expected[i]!, QUESTIONS[i]!));
    assert.ok(stats.peakLive >= 2, `requests were decoded together (peak ${stats.peakLive} rows)`);
    // max_tokens is each request's own: the short ones stop at theirs.
    assert.equal(got[4]!.usage!.completion_tokens, Math.min(3, expected[4]!.tokens.length));
  },
);

test(
  'a request that arrives while another decodes joins the running batch and still gets its lone tokens',
  { skip },
  async () => {
    const longQ = ask(QUESTIONS[3]!);
    const longL = await lone(longQ, 64);
    const shortL = await lone(ask(QUESTIONS[1]!), 12);
    assert.ok(longL.tokens.length > 20, `the long reply is long (${longL.tokens.length} tokens)`);
    const joinedBefore = stats.joinedRunning;
    const stream = await client.chat.completions.create({
      messages: longQ,
      model: 'tiny-llama',
      temperature: 0,
      max_tokens: 64,
      stream: true,
    });
    const it = stream[Symbol.asyncIterator]();
    let text = '';
    const first = await it.next();
    text += first.value.choices[0]?.delta.content ?? '';
    const short = await client.chat.completions.create({
      messages: ask(QUESTIONS[1]!),
      model: 'tiny-llama',
      temperature: 0,
      max_tokens: 12,
      logprobs: true,
    });
    assertSameAsLone(short, shortL, 'the joiner');
    assert.ok(stats.joinedRunning > joinedBefore, 'the second request joined a group that was decoding');
    for (let n = await it.next(); !n.done; n = await it.next()) text += n.value.choices[0]?.delta.content ?? '';
    assert.equal(text, longL.content);
    const log = stats.streams[stats.streams.length - 1]!;
    assert.equal(log.tokens, longL.tokens.length);
    assert.ok(
      log.firstChunkAtTokens! < log.tokens,
      `the first chunk was written after ${log.firstChunkAtTokens} of ${log.tokens} tokens`,
    );
  },
);

test('stop strings and seeds are per request: a seeded answer is the same alone and in a batch', { skip }, async () => {
  const l = await lone(ask(QUESTIONS[0]!), 40);
  assert.ok(l.content.length > 8, `a reply to cut (${JSON.stringify(l.content)})`);
  const stop = l.content.slice(4, 7);
  const seeded = { messages: ask('Pick a number.'), model: 'tiny-llama', temperature: 1, seed: 42, max_tokens: 20 };
  const alone = await client.chat.completions.create(seeded);
  const [cut, a, b, plain] = await Promise.all([
    client.chat.completions.create({
      messages: ask(QUESTIONS[0]!),
      model: 'tiny-llama',
      temperature: 0,
      max_tokens: 40,
      stop,
    }),
    client.chat.completions.create(seeded),
    client.chat.completions.create({ ...seeded, n: 3 }),
    client.chat.completions.create({
      messages: ask(QUESTIONS[2]!),
      model: 'tiny-llama',
      temperature: 0,
      max_tokens: 40,
    }),
  ]);
  assert.equal(cut.choices[0]!.message.content, l.content.slice(0, l.content.indexOf(stop)));
  assert.equal(cut.choices[0]!.finish_reason, 'stop');
  // Streamed live, the text that could begin the stop string is held back, never sent.
  const live = await client.chat.completions.create({
    messages: ask(QUESTIONS[0]!),
    model: 'tiny-llama',
    temperature: 0,
    max_tokens: 40,
    stop,
    stream: true,
  });
  let streamed = '';
  let finish: string | null = null;
  for await (const ch of live) {
    streamed += ch.choices[0]?.delta.content ?? '';
    finish = ch.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(streamed, cut.choices[0]!.message.content);
  assert.equal(finish, 'stop');
  assert.equal(a.choices[0]!.message.content, alone.choices[0]!.message.content);
  assert.equal(
    b.choices[0]!.message.content,
    alone.choices[0]!.message.content,
    'choice 0 of n = 3 is the n = 1 answer',
  );
  assert.equal(b.choices.length, 3);
  assert.equal(plain.choices[0]!.message.content, (await lone(ask(QUESTIONS[2]!), 40)).content);
});

test('log-probs and top_logprobs from the batch match a full forward of the prompt and reply', { skip }, async () => {
  const messages = ask(QUESTIONS[3]!);
  const [r] = await Promise.all([
    client.chat.completions.create({
      messages,
      model: 'tiny-llama',
      temperature: 0.7,
      seed: 5,
      max_tokens: 12,
      logprobs: true,
      top_logprobs: 4,
    }),
    client.chat.completions.create({ messages: ask('Hi'), model: 'tiny-llama', max_tokens: 30 }),
  ]);
  const content = r!.choices[0]!.logprobs!.content!;
  const prompt = renderPrompt(tok, messages, undefined);
  const ids = [...prompt, ...content.map((x) => tok.encode(x.token)[0]!)];
  // Tokens decode back to one id each for this tokenizer's plain pieces; the check is on those positions.
  const n = content.length;
  const [picked, topV, topI] = tf.tidy(() => {
    const logits = model.forward(tf.tensor2d(ids, [1, ids.length], 'int32')).logits;
    const rows = tf.slice(tf.reshape(logits, [ids.length, -1]), [prompt.length - 1, 0], [n, -1]);
    const lp = tf.logSoftmax(tf.div(rows, 0.7));
    const hot = tf.oneHot(tf.tensor1d(ids.slice(prompt.length), 'int32'), lp.shape[1]!);
    const top = tf.topk(lp, 4);
    return [tf.sum(tf.mul(lp, hot), 1).arraySync(), top.values.arraySync(), top.indices.arraySync()] as [
      number[],
      number[][],
      number[][],
    ];
  });
  content.forEach((x, t) => {
    assert.ok(Math.abs(x.logprob - picked[t]!) < 1e-3, `logprob at ${t}`);
    assert.deepEqual(
      x.top_logprobs.map((y) => y.token),
      topI[t]!.map((id) => tok.decode([id])),
      `top tokens at ${t}`,
    );
    x.top_logprobs.forEach((y, j) => assert.ok(Math.abs(y.logprob - topV[t]![j]!) < 1e-3, `top logprob ${j} at ${t}`));
  });
});

test(
  'a weight switch waits for the running batch; requests arriving meanwhile are answered by the new version only',
  { skip },
  async () => {
    const q = ask(QUESTIONS[3]!);
    const oldL = await lone(q, 48);
    const streams = await Promise.all(
      [0, 1, 2].map(() =>
        client.chat.completions.create({
          messages: q,
          model: 'tiny-llama',
          temperature: 0,
          max_tokens: 48,
          stream: true,
        }),
      ),
    );
    const its = streams.map((s) => s[Symbol.asyncIterator]());
    const texts = await Promise.all(its.map(async (it) => (await it.next()).value.choices[0]?.delta.content ?? ''));
    const w = model.p('model.layers.1.mlp.down_proj.weight');
    const switched = gate.switchTo((old) => {
      // As a training step does: the same weights, changed in place.
      tf.tidy(() => w.assign(tf.add(w, tf.randomNormal(w.shape, 0, 2, 'float32', 7))));
      return { model: new LocalRolloutModel(model, tok, 1), transformer: old.transformer };
    });
    // Sent while the switch waits for the batch: answered after it, by v1.
    const late = client.chat.completions.create({ messages: q, model: 'tiny-llama', temperature: 0, max_tokens: 48 });
    const fps = await Promise.all(
      its.map(async (it, i) => {
        let fp = '';
        for (let n = await it.next(); !n.done; n = await it.next()) {
          texts[i] += n.value.choices[0]?.delta.content ?? '';
          fp = n.value.system_fingerprint ?? fp;
        }
        return fp;
      }),
    );
    await switched;
    const newL = await lone(q, 48);
    assert.notEqual(newL.content, oldL.content, 'the new weights answer differently');
    texts.forEach((t) => assert.equal(t, oldL.content, 'a stream begun under v0 is v0 to its end'));
    fps.forEach((fp) => assert.equal(fp, 'v0'));
    const r = await late;
    assert.equal(r.system_fingerprint, 'v1');
    assert.equal(r.choices[0]!.message.content, newL.content);
  },
);

test('a client that disconnects mid-stream frees its row; the server keeps answering', { skip }, async () => {
  const before = stats.cancelled;
  const ac = new AbortController();
  const res = await fetch(`${srv.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: ask(QUESTIONS[3]!), temperature: 0, stream: true, max_tokens: 256 }),
    signal: ac.signal,
  });
  const reader = res.body!.getReader();
  await reader.read();
  ac.abort();
  await reader.read().catch(() => undefined);
  // The batch ends its rows: by cancellation, since the reply was far from done.
  while (gate.batcher.load.live + gate.batcher.load.queued > 0) await new Promise((r) => setImmediate(r));
  assert.equal(stats.cancelled, before + 1, 'the disconnected request left the batch');
  const next = await client.chat.completions.create({ messages: ask('Hi'), model: 'tiny-llama', max_tokens: 4 });
  assert.equal(next.choices.length, 1);
});
