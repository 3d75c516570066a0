import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { encodePrompt } from '../../backend/model/chat.js';
import { OpenAIRolloutModel, endpointVersion, promptMessages } from '../../backend/explorer/openai-model.js';
import { workflowSampling } from '../../backend/explorer/workflow.js';
import { workflows } from '../../backend/explorer/workflows/index.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';

const tok = CharTokenizer.train(['abcdefghijklmnopqrstuvwxyz <>/0123456789.,!?ABCDEFGHIJKLMNOPQRSTUVWXYZ']);

// A real HTTP server speaking the chat-completions protocol. Behaviour by the last user message:
// "fail500" -> HTTP 500, "badjson" -> not JSON, "nolp" -> no logprobs, "slow" -> never answers,
// "flaky" -> 503 on the first call then a good answer; otherwise it answers "<answer>42</answer>".
let server: Server;
let base = '';
const requests: {
  model: string;
  messages: { role: string; content: string }[];
  logprobs: boolean;
  max_tokens: number;
}[] = [];
let flakyCalls = 0;
before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url !== '/v1/chat/completions' || req.method !== 'POST') {
        res.writeHead(404).end('not found');
        return;
      }
      const r = JSON.parse(body);
      requests.push(r);
      const last = r.messages[r.messages.length - 1].content as string;
      if (last === 'fail500') return void res.writeHead(500).end('boom');
      if (last === 'badjson')
        return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"choices": [');
      if (last === 'slow') return; // never answers
      if (last === 'flaky' && flakyCalls++ === 0) return void res.writeHead(503).end('busy');
      const pieces = ['<answer>', '4', '2', '</answer>'];
      const lps = [-0.5, -1.25, -0.25, -0.125];
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          model: r.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: pieces.join('') },
              finish_reason: 'stop',
              logprobs:
                last === 'nolp'
                  ? null
                  : { content: pieces.map((t, i) => ({ token: t, logprob: lps[i], top_logprobs: [] })) },
            },
          ],
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

const task = (prompt: string) => ({ id: prompt, taskset: 'x', domain: 'math' as const, prompt, answer: '42' });
const ctx = (model: OpenAIRolloutModel) => ({
  model,
  reward: rewardFns.get('math_answer'),
  runId: 'r',
  repeatTimes: 2,
  sampling: workflowSampling({ maxNewTokens: 32, temperature: 0.7, topK: 0, topP: 0.9 }, model.tokenizer),
  step: 0,
  seed: 5,
  split: 'train' as const,
});

test('prompt tokens become chat messages again', () => {
  const ids = encodePrompt(tok, [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'what is 6 x 7?' },
  ]);
  assert.deepEqual(promptMessages(tok, ids), [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'what is 6 x 7?' },
  ]);
});

test('samples from the endpoint: text, tokens, log-probs credited to local tokens, version from the model name', async () => {
  const m = new OpenAIRolloutModel({ baseUrl: `${base}/v1`, model: 'qwen-test', tokenizer: tok });
  assert.equal(m.version, endpointVersion('qwen-test'));
  assert.notEqual(m.version, endpointVersion('other'));
  const exps = await workflows.get('single_turn').run([task('what is 6 x 7?')], ctx(m));
  assert.equal(exps.length, 2);
  const r = requests.at(-1)!;
  assert.equal(r.model, 'qwen-test');
  assert.equal(r.logprobs, true);
  assert.equal(r.max_tokens, 32);
  assert.deepEqual(r.messages, [{ role: 'user', content: 'what is 6 x 7?' }]);
  for (const e of exps) {
    assert.equal(e.status, 'ok');
    assert.equal(e.reward, 1);
    assert.equal(e.responseText, '<answer>42</answer>');
    assert.equal(e.modelVersion, m.version);
    assert.equal(e.logprobs.length, e.responseTokens.length);
    assert.equal(e.responseTokens.at(-1), tok.specialId('end'));
    const sum = e.logprobs.reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum - -2.125) < 1e-9, `sequence log-prob kept: ${sum}`);
    // Char tokenizer: '4' and '2' are single local tokens and get their server log-probs exactly.
    const text = e.responseTokens.map((t) => tok.decode([t], { skipSpecial: true }));
    assert.equal(e.logprobs[text.indexOf('4')], -1.25);
    assert.equal(e.logprobs[text.indexOf('2')], -0.25);
  }
});

test('a configured version is recorded; no server log-probs -> none recorded', async () => {
  const m = new OpenAIRolloutModel({ baseUrl: base, model: 'm', tokenizer: tok, version: 17 });
  const [e] = await workflows.get('single_turn').run([task('nolp')], { ...ctx(m), repeatTimes: 1 });
  assert.equal(e!.modelVersion, 17);
  assert.equal(e!.status, 'ok');
  assert.deepEqual(e!.logprobs, []);
});

test('endpoint failures are infra_failure, not reward 0; a transient 503 is retried', async () => {
  const m = new OpenAIRolloutModel({ baseUrl: base, model: 'm', tokenizer: tok, timeoutMs: 500, maxRetries: 1 });
  for (const [prompt, why] of [
    ['fail500', /HTTP 500/],
    ['badjson', /not JSON/],
    ['slow', /no reply within 500 ms/],
  ] as const) {
    const exps = await workflows.get('single_turn').run([task(prompt)], { ...ctx(m), repeatTimes: 1 });
    assert.equal(exps[0]!.status, 'infra_failure', prompt);
    assert.match(exps[0]!.statusReason!, why);
  }
  const [ok] = await workflows.get('single_turn').run([task('flaky')], { ...ctx(m), repeatTimes: 1 });
  assert.equal(ok!.status, 'ok');
  assert.equal(ok!.reward, 1);
  const down = new OpenAIRolloutModel({ baseUrl: 'http://127.0.0.1:9', model: 'm', tokenizer: tok, maxRetries: 0 });
  const [d] = await workflows.get('single_turn').run([task('x')], { ...ctx(down), repeatTimes: 1 });
  assert.equal(d!.status, 'infra_failure');
  const notFound = new OpenAIRolloutModel({ baseUrl: `${base}/wrong`, model: 'm', tokenizer: tok });
  const [nf] = await workflows.get('single_turn').run([task('x')], { ...ctx(notFound), repeatTimes: 1 });
  assert.equal(nf!.status, 'infra_failure');
  assert.match(nf!.statusReason!, /HTTP 404/);
});
