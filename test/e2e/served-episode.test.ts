// End to end in a real VS Code (code-server + chromium), issue 43 item 7: a serve run of a small
// tool-using model (test/helpers/tool-model.ts) answers the example agent (examples/agent/, the real
// `openai` client: the model calls the calculator, gets its output, answers); in the experience
// browser, Served episodes lists the waiting episode, which opens as a conversation (turns, the tool
// call, the model's own tokens highlighted) and is rated: the run accepts the reward. Screenshots
// of the episode before and after the rating (test-artifacts/e2e/). The model is pretrained briefly
// (250 steps, to keep this file short): its tool call and answer may be wrong; the view is what is tested.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { initEngine } from '../../backend/model/engine.js';
import { makeToolModel } from '../helpers/tool-model.js';
import { runAgent } from '../../examples/agent/agent.js';
import { E2E_SETTINGS, runCommand, startSession, type Session, test } from './code-server.js';

let s: Session;
let ws: string;
const stop = new AbortController();
let done: Promise<unknown> | undefined;

before(async () => {
  await initEngine();
  ws = mkdtempSync(join(tmpdir(), 'rft-e2e-serve-'));
  mkdirSync(join(ws, '.vscode'));
  const model = await makeToolModel(join(ws, 'model'), { steps: 250 });
  writeFileSync(join(ws, 'eval.jsonl'), '{"id": "e1", "prompt": "What is 6*7?", "answer": "42", "domain": "math"}\n');
  const config = join(ws, 'calc.rft.yaml');
  writeFileSync(
    config,
    `name: calc\nmode: serve\nplacement: memory\nmodel: { checkpoint: ${JSON.stringify(model)} }\n` +
      'taskset: { path: eval.jsonl }\neval: { path: eval.jsonl }\nworkflow: { reward: exact_match }\nalgorithm: { name: grpo }\n' +
      'explorer: { eval_sampling: { max_new_tokens: 4 } }\ntrainer: { steps: 100 }\nmonitor: { report: false }\n' +
      'serve: { limits: { max_tokens: 96 }, reward_timeout_seconds: 3600 }\n',
  );
  writeFileSync(
    join(ws, '.vscode', 'settings.json'),
    JSON.stringify({ 'rftStudio.bufferPath': '.rft/runs/calc/buffer.db' }),
  );
  done = runJob({
    config: loadRunConfig(config),
    configPath: config,
    workspace: ws,
    runId: 'calc',
    signal: stop.signal,
  });
  done.catch(() => {});
  const info = join(ws, '.rft', 'runs', 'calc', 'serve.json');
  while (!existsSync(info)) await new Promise((r) => setTimeout(r, 200));
  const { base_url, token_file } = JSON.parse(readFileSync(info, 'utf8'));
  const client = new OpenAI({ baseURL: base_url, apiKey: readFileSync(token_file, 'utf8').trim(), maxRetries: 0 });
  // A product: the model calls the calculator for it, then answers from the tool's output.
  const r = await runAgent(client, 'What is 6*7?', {
    model: 'calc',
    temperature: 0,
    episodeId: 'ep-6x7',
    maxTokens: 96,
  });
  console.log(JSON.stringify({ e2e: 'agent', answer: r.answer, toolCalls: r.toolCalls }));
  s = await startSession(ws, E2E_SETTINGS);
});

after(async () => {
  await s?.close();
  stop.abort();
  await done?.catch(() => undefined);
});

const browserFrame = () => s.page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');

test('a served episode opens in the browser as a conversation and is rated', async () => {
  const { page } = s;
  await page.locator('.activitybar [aria-label^="RFT Studio"]').first().click({ timeout: 60_000 });
  await runCommand(page, 'RFT Studio: Open Experience Browser');
  const f = browserFrame();
  await f.locator('#served-episodes').click({ timeout: 90_000 });
  const row = f.locator('.served-row[data-episode="ep-6x7"]');
  await row.waitFor({ timeout: 60_000 });
  await row.click();
  await f.locator('.detail .conversation').waitFor({ timeout: 30_000 });
  const roles = await f.locator('.detail .turn').evaluateAll((els) => els.map((e) => e.getAttribute('data-role')));
  assert.equal(roles[0], 'user');
  assert.ok(roles.includes('assistant'), roles.join(','));
  assert.ok((await f.locator('.detail .tok.trained').count()) > 0, 'trained tokens highlighted');
  const shot = await s.shot('21-served-episode-dark');
  console.log(JSON.stringify({ e2e: 'screenshot', path: shot }));
  await f.locator('.reward-btn[data-reward="1"]').click();
  await f.locator('.rate-result', { hasText: 'accepted' }).waitFor({ timeout: 30_000 });
  await s.shot('22-served-episode-rated-dark');
});
