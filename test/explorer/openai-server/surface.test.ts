// The OpenAI-compatible surface over a rollout model, checked with the real `openai` npm client:
// models, completions (n, seed, stop, logprobs/top_logprobs, usage, system_fingerprint = policy
// version), streaming, tools through the Qwen chat template, and OpenAI-shaped errors for bad input.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { initEngine } from '../../../backend/model/engine.js';
import { loadCheckpoint } from '../../../backend/model/checkpoint.js';
import { LocalRolloutModel } from '../../../backend/explorer/local-model.js';
import { PolicyGate } from '../../../backend/explorer/openai-server/policy.js';
import { startOpenAIServer } from '../../../backend/explorer/openai-server/http.js';
import { makeHfModel, type HfModelSpec } from '../../../tools/hf-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-openai-surface-'));
const spec = (tokenizer: 'qwen3' | 'llama3'): HfModelSpec => ({
  architecture: tokenizer === 'qwen3' ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM',
  tokenizer,
  hidden: 16,
  layers: 1,
  heads: 2,
  kvHeads: 1,
  intermediate: 24,
  tied: true,
  seed: 3,
});
const qwen = loadCheckpoint(makeHfModel(join(root, 'qwen'), spec('qwen3')));
const llama = loadCheckpoint(makeHfModel(join(root, 'llama'), spec('llama3')));
const TOKEN = 'test-token-1234';
const gate = new PolicyGate(
  { model: new LocalRolloutModel(qwen.model, qwen.tokenizer!, 3), transformer: qwen.model },
  'tiny-qwen',
);
const srv = await startOpenAIServer({ gate, token: TOKEN, limits: { maxTokens: 16, maxBodyBytes: 200_000 } });
const llamaGate = new PolicyGate({ model: new LocalRolloutModel(llama.model, llama.tokenizer!, 0) }, 'tiny-llama');
const llamaSrv = await startOpenAIServer({ gate: llamaGate, token: TOKEN });
const client = new OpenAI({ baseURL: srv.baseURL, apiKey: TOKEN, maxRetries: 0 });
after(async () => {
  await srv.close();
  await llamaSrv.close();
  qwen.model.dispose();
  llama.model.dispose();
  rmSync(root, { recursive: true, force: true });
});

const ask = [
  { role: 'system' as const, content: 'Be brief.' },
  { role: 'user' as const, content: 'What is 6 * 7?' },
];

test('GET /v1/models lists the served model; the server listens on 127.0.0.1 by default', async () => {
  assert.match(srv.baseURL, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  const list = await client.models.list();
  assert.deepEqual(
    list.data.map((m) => m.id),
    ['tiny-qwen'],
  );
  assert.equal((await client.models.retrieve('tiny-qwen')).id, 'tiny-qwen');
});

test('a completion: n choices, the policy version as system_fingerprint, usage, seeded sampling, log-probs', async () => {
  const a = await client.chat.completions.create({
    model: 'tiny-qwen',
    messages: ask,
    n: 2,
    seed: 7,
    max_tokens: 8,
    temperature: 1,
    logprobs: true,
    top_logprobs: 3,
  });
  assert.equal(a.object, 'chat.completion');
  assert.equal(a.system_fingerprint, 'v3');
  assert.equal(a.choices.length, 2);
  for (const c of a.choices) {
    assert.equal(c.message.role, 'assistant');
    assert.equal(typeof c.message.content, 'string');
    assert.ok(c.finish_reason === 'stop' || c.finish_reason === 'length');
    const lp = c.logprobs!.content!;
    assert.ok(lp.length >= 1 && lp.length <= 8);
    for (const t of lp) {
      assert.ok(t.logprob <= 0 && Number.isFinite(t.logprob));
      assert.equal(t.top_logprobs.length, 3);
      // The most likely token is at least as likely as the sampled one (same temperature).
      assert.ok(t.top_logprobs[0]!.logprob >= t.logprob - 1e-4, `${t.top_logprobs[0]!.logprob} < ${t.logprob}`);
    }
    assert.equal(lp.map((t) => t.token).join(''), c.message.content);
  }
  assert.ok(a.usage!.prompt_tokens > 10);
  assert.equal(a.usage!.total_tokens, a.usage!.prompt_tokens + a.usage!.completion_tokens);
  const b = await client.chat.completions.create({ model: 'tiny-qwen', messages: ask, n: 2, seed: 7, max_tokens: 8 });
  assert.deepEqual(
    b.choices.map((c) => c.message.content),
    a.choices.map((c) => c.message.content),
  );
  // max_completion_tokens bounds the answer the same way.
  const c = await client.chat.completions.create({
    messages: ask,
    seed: 1,
    max_completion_tokens: 2,
    temperature: 2,
    model: 'tiny-qwen',
  });
  assert.ok(c.usage!.completion_tokens <= 2);
});

test('a stream delivers the same answer as chunks, ending with the finish reason (the client reads to [DONE])', async () => {
  const whole = await client.chat.completions.create({ model: 'tiny-qwen', messages: ask, seed: 11, max_tokens: 10 });
  const stream = await client.chat.completions.create({
    model: 'tiny-qwen',
    messages: ask,
    seed: 11,
    max_tokens: 10,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let finish: string | null = null;
  let chunks = 0;
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const ch of stream) {
    chunks++;
    assert.equal(ch.system_fingerprint, 'v3');
    if (ch.usage) usage = ch.usage;
    for (const c of ch.choices) {
      text += c.delta.content ?? '';
      finish = c.finish_reason ?? finish;
    }
  }
  assert.equal(text, whole.choices[0]!.message.content);
  assert.equal(finish, whole.choices[0]!.finish_reason);
  assert.ok(chunks >= 3, `${chunks} chunks`);
  assert.deepEqual(usage, whole.usage);
});

test('a stop string ends the answer before it', async () => {
  const free = await client.chat.completions.create({ model: 'tiny-qwen', messages: ask, seed: 5, max_tokens: 12 });
  const text = free.choices[0]!.message.content!;
  assert.ok(text.length >= 4, text);
  const stop = text.slice(2, 4);
  const cut = await client.chat.completions.create({
    model: 'tiny-qwen',
    messages: ask,
    seed: 5,
    max_tokens: 12,
    stop,
  });
  assert.equal(cut.choices[0]!.message.content, text.slice(0, text.indexOf(stop)));
  assert.equal(cut.choices[0]!.finish_reason, 'stop');
});

test('tools and a multi-turn tool exchange go through the Qwen template; a template without tools is refused', async () => {
  const tools: OpenAI.ChatCompletionTool[] = [
    {
      type: 'function',
      function: {
        name: 'add',
        description: 'Add two numbers',
        parameters: { type: 'object', properties: { a: { type: 'number' } } },
      },
    },
  ];
  const r = await client.chat.completions.create({
    model: 'tiny-qwen',
    tools,
    max_tokens: 4,
    messages: [
      ...ask,
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":6}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: '42' },
    ],
  });
  assert.ok(r.usage!.prompt_tokens > 60, `${r.usage!.prompt_tokens}: the tool list is in the prompt`);
  const plain = new OpenAI({ baseURL: llamaSrv.baseURL, apiKey: TOKEN, maxRetries: 0 });
  const ok = await plain.chat.completions.create({ model: 'tiny-llama', messages: ask, max_tokens: 3 });
  assert.equal(ok.system_fingerprint, 'v0');
  await assert.rejects(
    plain.chat.completions.create({ model: 'tiny-llama', messages: ask, tools }),
    (e: unknown) =>
      e instanceof OpenAI.BadRequestError &&
      e.code === 'tools_not_supported' &&
      e.param === 'tools' &&
      /does not support tools/.test(e.message),
  );
});

test('bad requests get OpenAI-shaped errors the client raises as its own types, and the server keeps serving', async () => {
  const bad = new OpenAI({ baseURL: srv.baseURL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.models.list(), OpenAI.AuthenticationError);
  await assert.rejects(
    bad.chat.completions.create({ model: 'tiny-qwen', messages: ask }),
    (e: unknown) => e instanceof OpenAI.AuthenticationError && e.code === 'invalid_api_key',
  );
  await assert.rejects(
    client.chat.completions.create({ model: 'tiny-qwen', messages: [{ role: 'wizard', content: 'hi' } as never] }),
    (e: unknown) =>
      e instanceof OpenAI.BadRequestError && e.param === 'messages[0].role' && /unknown role "wizard"/.test(e.message),
  );
  await assert.rejects(
    client.chat.completions.create({
      model: 'tiny-qwen',
      messages: [{ role: 'user', content: 'hello '.repeat(5000) }],
    }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded',
  );
  await assert.rejects(
    client.chat.completions.create({ model: 'tiny-qwen', messages: ask, max_tokens: 17 }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === 'max_tokens' && /limit of 16/.test(e.message),
  );
  await assert.rejects(
    client.chat.completions.create({ model: 'tiny-qwen', messages: ask, temperature: 3 }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === 'temperature',
  );
  await assert.rejects(
    client.chat.completions.create({ model: 'tiny-qwen', messages: ask, frequency_penalty: 0.5 }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === 'frequency_penalty',
  );
  await assert.rejects(
    client.chat.completions.create({ model: 'gpt-4o', messages: ask }),
    (e: unknown) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found',
  );
  const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const url = `${srv.baseURL}/chat/completions`;
  const malformed = await fetch(url, { method: 'POST', headers: auth, body: '{"messages": [' });
  assert.equal(malformed.status, 400);
  const mj = (await malformed.json()) as { error: Record<string, unknown> };
  assert.deepEqual(Object.keys(mj.error).sort(), ['code', 'message', 'param', 'type']);
  assert.equal(mj.error.code, 'invalid_json');
  assert.equal(mj.error.type, 'invalid_request_error');
  const big = await fetch(url, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(300_000) }] }),
  });
  assert.equal(big.status, 413);
  assert.equal(((await big.json()) as { error: { code: string } }).error.code, 'request_too_large');
  // A client that goes away mid-stream: the server keeps answering the next one.
  const ac = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ messages: ask, stream: true, max_tokens: 16 }),
    signal: ac.signal,
  });
  const reader = res.body!.getReader();
  await reader.read();
  ac.abort();
  const after = await client.chat.completions.create({ model: 'tiny-qwen', messages: ask, max_tokens: 2 });
  assert.equal(after.system_fingerprint, 'v3');
});
