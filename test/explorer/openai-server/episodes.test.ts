// Served calls recorded as episodes and trained experiences: calls that extend the previous call
// merge into one multi-turn experience (the model's tokens trainable with their behaviour log-probs,
// the user turn between masked), a call that does not starts a branch, rewards are accepted or
// refused by name, a config reward function scores a transcript, and an unrewarded episode is
// dropped past the timeout, never stored with a zero reward. Real client, real model, real buffer.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { initEngine } from '../../../backend/model/engine.js';
import { loadCheckpoint } from '../../../backend/model/checkpoint.js';
import { openStore } from '../../../backend/buffer/storage/index.js';
import { LocalRolloutModel } from '../../../backend/explorer/local-model.js';
import { resolveReward } from '../../../backend/explorer/reward-resolve.js';
import { PolicyGate } from '../../../backend/explorer/openai-server/policy.js';
import { EpisodeBook } from '../../../backend/explorer/openai-server/episodes.js';
import { startOpenAIServer } from '../../../backend/explorer/openai-server/http.js';
import { makeHfModel } from '../../../tools/hf-model.js';
import type { HfTokenizer } from '../../../backend/model/hf/tokenizer.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-openai-episodes-'));
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
    seed: 3,
  }),
);
const tok = ck.tokenizer as HfTokenizer;
const store = await openStore(join(root, 'buffer.db'));
let clock = 1_000_000;
const book = new EpisodeBook({
  runId: 'serve-run',
  sink: async (exps) => {
    await store.appendExperiences(exps);
  },
  rewardTimeoutMs: 60_000,
  now: () => clock,
});
const gate = new PolicyGate({ model: new LocalRolloutModel(ck.model, tok, 4), transformer: ck.model }, 'tiny');
const TOKEN = 'tok-episodes';
const srv = await startOpenAIServer({ gate, token: TOKEN, episodes: book, rewardFn: resolveReward('exact_match') });
const client = new OpenAI({ baseURL: srv.baseURL, apiKey: TOKEN, maxRetries: 0 });
after(async () => {
  await srv.close();
  await store.close();
  ck.model.dispose();
  rmSync(root, { recursive: true, force: true });
});

async function postRewards(
  rewards: unknown[],
): Promise<{ accepted: number; refused: number; results: { episode_id: string; status: string; reason?: string }[] }> {
  return client.post('/rft/rewards', { body: { rewards } });
}

type Msg = OpenAI.ChatCompletionMessageParam;

test('two calls that extend each other become ONE experience: replies trainable with their log-probs, the user turn masked', async () => {
  const meta = { episode_id: 'ep-a' };
  const m1: Msg[] = [
    { role: 'system', content: 'Answer briefly.' },
    { role: 'user', content: 'What is 2 + 2?' },
  ];
  const r1 = await client.chat.completions.create({
    model: 'tiny',
    messages: m1,
    max_tokens: 6,
    seed: 1,
    metadata: meta,
    logprobs: true,
  });
  const reply1 = r1.choices[0]!.message;
  const m2: Msg[] = [...m1, { role: 'assistant', content: reply1.content }, { role: 'user', content: 'And 3 + 3?' }];
  const r2 = await client.chat.completions.create({
    model: 'tiny',
    messages: m2,
    max_tokens: 6,
    seed: 2,
    metadata: meta,
    logprobs: true,
  });
  assert.equal(r2.system_fingerprint, 'v4');
  // Waiting for its reward, the episode is listed (GET /v1/rft/episodes: the editor's Served episodes).
  const waiting = (await client.get('/rft/episodes')) as {
    data: { episode_id: string; calls: number; messages: { role: string }[]; tokens: number[]; mask: number[] }[];
  };
  const w = waiting.data.find((x) => x.episode_id === 'ep-a')!;
  assert.equal(w.calls, 2);
  assert.deepEqual(
    w.messages.map((m) => m.role),
    ['system', 'user', 'assistant', 'user', 'assistant'],
  );
  assert.equal(w.tokens.length, w.mask.length);
  const answer = await postRewards([{ episode_id: 'ep-a', reward: 0.75 }]);
  assert.deepEqual(answer.results, [{ episode_id: 'ep-a', status: 'accepted', reward: 0.75 }]);

  const taskId = `t-${createHash('sha256').update('What is 2 + 2?').digest('hex').slice(0, 16)}`;
  const rows = await store.list({ runId: 'serve-run', taskId });
  assert.equal(rows.length, 1, 'one experience for the episode');
  const e = rows[0]!;
  assert.equal(e.reward, 0.75);
  assert.equal(e.modelVersion, 4);
  // The conversation as the client sent it, then the last reply (the buffer browser draws it).
  const { messages, ...rest } = e.metadata as { messages: { role: string; content: string }[] };
  assert.deepEqual(rest, { served: true, episode_id: 'ep-a', branch: 0, calls: 2 });
  assert.deepEqual(
    messages.map((m) => m.role),
    ['system', 'user', 'assistant', 'user', 'assistant'],
  );
  assert.equal(messages[4]!.content, r2.choices[0]!.message.content);
  assert.ok(
    !((await client.get('/rft/episodes')) as { data: { episode_id: string }[] }).data.some(
      (x) => x.episode_id === 'ep-a',
    ),
    'no longer waiting',
  );
  assert.equal(e.responseTokens.length, e.actionMask.length);
  assert.equal(e.logprobs.length, e.actionMask.length);
  // The sequence is the conversation as the template lays it out, the second reply at its end.
  const all = tok.decode([...e.promptTokens, ...e.responseTokens]);
  const rendered = tok.renderChat(
    [
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'What is 2 + 2?' },
      { role: 'assistant', content: reply1.content! },
      { role: 'user', content: 'And 3 + 3?' },
    ],
    true,
  );
  assert.ok(all.startsWith(rendered), `${all}\n---\n${rendered}`);
  // Trainable: exactly the sampled tokens of both replies, with the log-probs the client was given.
  const trained = e.responseTokens.filter((_, i) => e.actionMask[i] === 1);
  const sampledLogprobs = e.logprobs.filter((_, i) => e.actionMask[i] === 1);
  const seg = e.segments!;
  assert.equal(seg.length, 2);
  assert.deepEqual(
    seg.map((s) => [s.version, s.start]),
    [
      [4, 0],
      [4, seg[0]!.end],
    ],
  );
  assert.equal(seg[1]!.end, e.responseTokens.length);
  const last = e.actionMask.lastIndexOf(0) + 1;
  assert.equal(trained.length, seg[0]!.end + (e.responseTokens.length - last));
  assert.ok(e.actionMask.slice(0, seg[0]!.end).every((m) => m === 1));
  const given = [...r1.choices[0]!.logprobs!.content!, ...r2.choices[0]!.logprobs!.content!].map((t) => t.logprob);
  for (const lp of given)
    assert.ok(
      sampledLogprobs.some((x) => Math.abs(x - lp) < 1e-9),
      `${lp} recorded`,
    );
  // Masked: the user's second turn (and the template's markers around it), never trained.
  const masked = tok.decode(e.responseTokens.filter((_, i) => e.actionMask[i] === 0));
  assert.match(masked, /<\|im_start\|>user\nAnd 3 \+ 3\?<\|im_end\|>\n<\|im_start\|>assistant\n/);
  for (let i = 0; i < e.actionMask.length; i++) if (e.actionMask[i] === 0) assert.equal(e.logprobs[i], 0);
  assert.equal(tok.decode(e.responseTokens.slice(last), { skipSpecial: true }), r2.choices[0]!.message.content);

  // The episode is closed: another call or reward for it is refused by name.
  await assert.rejects(
    client.chat.completions.create({ model: 'tiny', messages: m2, metadata: meta }),
    (err: unknown) => err instanceof OpenAI.BadRequestError && err.code === 'episode_closed',
  );
});

test('a call that does not extend its episode starts a branch, stored as its own row that says why', async () => {
  const meta = { episode_id: 'ep-b', task_id: 'my-task' };
  await client.chat.completions.create({
    model: 'tiny',
    messages: [{ role: 'user', content: 'Name a colour.' }],
    max_tokens: 4,
    metadata: meta,
  });
  await client.chat.completions.create({
    model: 'tiny',
    messages: [{ role: 'user', content: 'Name a fruit.' }],
    max_tokens: 4,
    metadata: meta,
  });
  assert.equal((await postRewards([{ episode_id: 'ep-b', reward: 1 }])).accepted, 1);
  const rows = (await store.list({ runId: 'serve-run', taskId: 'my-task' })).sort(
    (a, b) => (a.metadata!.branch as number) - (b.metadata!.branch as number),
  );
  assert.equal(rows.length, 2);
  assert.equal(rows[0]!.metadata!.branch_reason, undefined);
  assert.match(String(rows[1]!.metadata!.branch_reason), /do not extend the previous call's messages and reply/);
  assert.ok(rows.every((r) => r.groupId === 'serve-run:serve:my-task' && r.reward === 1));
});

test('rewards are accepted or refused item by item; a config reward function scores a transcript', async () => {
  const plain = await client.chat.completions
    .create({ model: 'tiny', messages: [{ role: 'user', content: 'Say hi.' }], max_tokens: 4 })
    .withResponse();
  const id = plain.response.headers.get('x-rft-episode-id')!;
  assert.match(id, /^ep-[0-9a-f]{18}$/);
  const other = await client.chat.completions
    .create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'Say bye.' }],
      max_tokens: 4,
      metadata: { episode_id: 'ep-c' },
    })
    .withResponse();
  const r = await postRewards([
    { episode_id: 'nope', reward: 1 },
    { episode_id: id, reward: 'high' },
    { episode_id: id, reward: 0.5 },
    { episode_id: id, reward: 0.25 },
    { episode_id: 'ep-c', answer: other.data.choices[0]!.message.content },
  ]);
  assert.deepEqual(
    r.results.map((x) => [x.episode_id, x.status, x.reason ?? '']),
    [
      ['nope', 'refused', 'unknown episode id'],
      [id, 'refused', 'reward must be a finite number; got "high"'],
      [id, 'accepted', ''],
      [id, 'refused', 'already rewarded'],
      ['ep-c', 'accepted', ''],
    ],
  );
  const [c] = await store.list({
    runId: 'serve-run',
    taskId: `t-${createHash('sha256').update('Say bye.').digest('hex').slice(0, 16)}`,
  });
  assert.equal(c!.reward, 1, 'exact_match of the reply against itself');
  assert.equal(c!.rewardDetails!.reward_source, 'workflow.reward');
  await assert.rejects(client.post('/rft/rewards', { body: { rewards: 'x' } }), OpenAI.BadRequestError);
  const noAuth = new OpenAI({ baseURL: srv.baseURL, apiKey: 'bad', maxRetries: 0 });
  await assert.rejects(noAuth.post('/rft/rewards', { body: { rewards: [] } }), OpenAI.AuthenticationError);
});

test('an episode left without a reward past the timeout is dropped and counted, never stored', async () => {
  await client.chat.completions.create({
    model: 'tiny',
    messages: [{ role: 'user', content: 'Forget me.' }],
    max_tokens: 3,
    metadata: { episode_id: 'ep-late', task_id: 'late' },
  });
  clock += 30_000;
  assert.equal(book.sweep(), 0, 'not yet');
  const before = book.stats.dropped;
  clock += 31_000;
  assert.equal(book.sweep(), 1);
  assert.equal(book.stats.dropped, before + 1);
  const r = await postRewards([{ episode_id: 'ep-late', reward: 1 }]);
  assert.equal(r.results[0]!.reason, 'unknown episode id (dropped: no reward within the reward timeout)');
  assert.equal((await store.list({ runId: 'serve-run', taskId: 'late' })).length, 0);
});
