// `npm run bench -- serve [--hidden D] [--layers L] [--tokens N] [--rounds R]`: requests/s and
// tokens/s of the OpenAI-compatible server (mode serve) at 1, 8 and 64 concurrent clients (real HTTP,
// plain fetch on a worker thread, each client sending R requests of N tokens one after another) against the project's own
// batch sampling of the same model in the same run: generate() with a batch of 64 prompts of N tokens.
// A synthetic Llama-layout model (the Llama-3 tokenizer, random weights, sampling at temperature 1).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { initEngine } from '../backend/model/engine.js';
import { loadCheckpoint } from '../backend/model/checkpoint.js';
import { generate } from '../backend/model/generate.js';
import { stopTokens } from '../backend/model/chat.js';
import { LocalRolloutModel } from '../backend/explorer/local-model.js';
import { PolicyGate } from '../backend/explorer/openai-server/policy.js';
import { startOpenAIServer } from '../backend/explorer/openai-server/http.js';
import { renderPrompt } from '../backend/explorer/openai-server/render.js';
import { batchable } from '../backend/explorer/openai-server/batcher.js';
import { makeHfModel } from '../tools/hf-model.js';
import { report } from './report.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const hidden = arg('hidden', 256);
const layers = arg('layers', 4);
const N = arg('tokens', 32);
const rounds = arg('rounds', 2);

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-bench-serve-'));
const ck = loadCheckpoint(
  makeHfModel(join(root, 'm'), {
    architecture: 'LlamaForCausalLM',
    tokenizer: 'llama3',
    hidden,
    layers,
    heads: hidden / 32,
    kvHeads: Math.max(1, hidden / 128),
    intermediate: hidden * 3,
    tied: true,
    seed: 1,
  }),
);
const model = ck.model;
const tok = ck.tokenizer!;
if (!batchable(model))
  console.error('serve bench: the native decode is not available; the server decodes each request alone');
// The same questions the clients ask (CLIENTS below).
const question = (i: number) => `Question ${i}: what is ${i} * ${i + 3}? Explain step by step.`;
const messages = (i: number) => [{ role: 'user' as const, content: question(i) }];

// The batch sampler: 64 prompts in one generate() call (as a rollout step samples them).
const prompts = Array.from({ length: 64 }, (_, i) => renderPrompt(tok, messages(i), undefined));
const batchRun = async () => {
  const t0 = performance.now();
  const gens = await generate(model, tok, prompts, {
    maxNewTokens: N,
    temperature: 1,
    seed: 3,
    stopTokens: stopTokens(tok),
  });
  const s = (performance.now() - t0) / 1000;
  return { tokens: gens.reduce((n, g) => n + g.tokens.length, 0), s };
};
await batchRun(); // warm-up
const base = await batchRun();
const baseTps = base.tokens / base.s;
report({
  bench: 'serve',
  figure: 'batch_sampler_64',
  unit: 'tokens/s',
  value: baseTps,
  model: { hidden, layers },
  tokens: N,
});

const gate = new PolicyGate({ model: new LocalRolloutModel(model, tok, 0), transformer: model }, 'bench');
const TOKEN = 'bench-token';
const srv = await startOpenAIServer({ gate, token: TOKEN, limits: { maxTokens: N, maxConcurrent: 64 } });
// The clients run on a worker thread (their own event loop, as clients elsewhere would), plain fetch.
const CLIENTS = `
const { parentPort, workerData: w } = require('node:worker_threads');
const ask = async (i) => {
  const r = await fetch(w.url + '/chat/completions', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + w.token, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Question ' + i + ': what is ' + i + ' * ' + (i + 3) + '? Explain step by step.' }], max_tokens: w.N, temperature: 1, seed: i }),
  });
  if (r.status !== 200) throw new Error('HTTP ' + r.status + ': ' + (await r.text()));
  return (await r.json()).usage.completion_tokens;
};
(async () => {
  const t0 = performance.now();
  const counts = await Promise.all(Array.from({ length: w.clients }, async (_, c) => {
    let n = 0;
    for (let r = 0; r < w.rounds; r++) n += await ask(c * w.rounds + r);
    return n;
  }));
  parentPort.postMessage({ tokens: counts.reduce((a, b) => a + b, 0), s: (performance.now() - t0) / 1000 });
})().catch((e) => parentPort.postMessage({ error: String(e) }));
`;
const load = (clients: number, rounds: number) =>
  new Promise<{ tokens: number; s: number }>((resolve, reject) => {
    const w = new Worker(CLIENTS, { eval: true, workerData: { url: srv.baseURL, token: TOKEN, N, clients, rounds } });
    w.once('message', (m: { tokens: number; s: number; error?: string }) =>
      m.error ? reject(new Error(`serve bench: ${m.error}`)) : resolve(m),
    );
    w.once('error', reject);
  });
await load(1, 1); // warm-up
for (const clients of [1, 8, 64]) {
  const st = gate.batcher.stats;
  const [steps0, rows0] = [st.steps, st.rowSteps];
  const { tokens, s } = await load(clients, rounds);
  const rowsPerStep = (st.rowSteps - rows0) / Math.max(1, st.steps - steps0);
  report({
    bench: 'serve',
    figure: `serve_${clients}_clients`,
    unit: 'tokens/s',
    value: tokens / s,
    baseline: 'batch_sampler_64',
    baseline_value: baseTps,
    requests_per_s: Math.round(((clients * rounds) / s) * 100) / 100,
    requests: clients * rounds,
    mean_rows_per_step: Math.round(rowsPerStep * 10) / 10,
  });
}
await srv.close();
model.dispose();
rmSync(root, { recursive: true, force: true });
process.exit(0);
