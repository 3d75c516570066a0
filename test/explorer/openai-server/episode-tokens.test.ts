// An episode continues from its own sampled tokens even where re-encoding its text would give other
// tokens (a model may sample "h","e","l","l","o" where the tokenizer writes "hello" as one token):
// the next call is served those tokens, then the new turns, so the experience is what the model saw.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HfTokenizer } from '../../../backend/model/hf/tokenizer.js';
import { EpisodeBook } from '../../../backend/explorer/openai-server/episodes.js';
import { renderPrompt } from '../../../backend/explorer/openai-server/render.js';
import { parseChatRequest } from '../../../backend/explorer/openai-server/request.js';
import type { Completion } from '../../../backend/explorer/openai-server/completions.js';
import type { Experience } from '../../../backend/core/types.js';
import { tokenizerDir } from '../../../tools/hf-model.js';

const dir = tokenizerDir('qwen3');
const cfgFile = join(dir, 'tokenizer_config.json');
const tokenizerConfig = JSON.parse(readFileSync(cfgFile, 'utf8'));
const tok = new HfTokenizer(
  { tokenizer: JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')), tokenizerConfig },
  dir,
  { name: 'default', text: tokenizerConfig.chat_template, file: cfgFile, field: 'chat_template' },
);

function completion(prompt: number[], tokens: number[], text: string): Completion {
  return {
    id: 'c',
    created: 0,
    version: 7,
    promptTokens: prompt,
    tokenizer: tok,
    choices: [
      { tokens, logprobs: tokens.map(() => -0.5), text, finishReason: 'stop', reply: { content: text, toolCalls: [] } },
    ],
  };
}

test('a continuation keeps the sampled tokens when the template re-encodes the reply differently', async () => {
  const stored: Experience[] = [];
  const book = new EpisodeBook({ runId: 'r', sink: async (e) => void stored.push(...e), rewardTimeoutMs: 1000 });
  const m1 = [{ role: 'user', content: 'Say hello.' }];
  const r1 = parseChatRequest({ messages: m1, metadata: { episode_id: 'x' } });
  const c1 = book.begin(r1);
  const p1 = c1.prepare(renderPrompt(tok, r1.messages, undefined), tok);
  const sampled = [...[...'hello'].flatMap((ch) => tok.encode(ch)), tok.endOfTurnId];
  c1.finish(completion(p1, sampled, 'hello'));

  const r2 = parseChatRequest({
    messages: [...m1, { role: 'assistant', content: 'hello' }, { role: 'user', content: 'Again.' }],
    metadata: { episode_id: 'x' },
  });
  const rendered = renderPrompt(tok, r2.messages, undefined);
  const so = [...p1, ...sampled];
  assert.notDeepEqual(rendered.slice(0, so.length), so, 'the template re-encodes "hello" as other tokens');
  const c2 = book.begin(r2);
  const served = c2.prepare(rendered, tok);
  assert.deepEqual(served.slice(0, so.length), so, 'served from the episode own tokens');
  assert.equal(tok.decode(served), tok.decode(rendered), 'the same text');
  const reply2 = tok.encode('hi');
  c2.finish(completion(served, reply2, 'hi'));
  await book.reward('x', 1);
  assert.equal(stored.length, 1);
  const e = stored[0]!;
  assert.deepEqual([...e.promptTokens, ...e.responseTokens], [...served, ...reply2]);
  assert.equal(e.actionMask.filter((m) => m === 1).length, sampled.length + reply2.length);
  assert.equal(e.metadata!.branch_reason, undefined);
});
