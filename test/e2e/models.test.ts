// End to end in a real VS Code (code-server + chromium): "RFT Studio: Import Model…" lists a model of
// the Hugging Face cache (HF_HUB_CACHE, a tiny random-weight Qwen2 in the models--org--name layout);
// picking it puts its card in the Models view (architecture, size, dtype, tokenizer, path).
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeHubEntry, TINY_QWEN2 } from '../../tools/hf-model.js';
import { E2E_SETTINGS, runCommand, startSession, timing, type Session, test } from './code-server.js';

let s: Session;
let ws: string;
const REV = '0123456789abcdef0123456789abcdef01234567';

before(async () => {
  const cache = mkdtempSync(join(tmpdir(), 'rft-e2e-hub-'));
  makeHubEntry(cache, 'acme/tiny-qwen2', REV, TINY_QWEN2);
  // code-server passes its environment to the extension host, and the extension to `rft serve`.
  process.env.HF_HUB_CACHE = cache;
  ws = mkdtempSync(join(tmpdir(), 'rft-e2e-models-'));
  mkdirSync(join(ws, 'tasksets'));
  writeFileSync(join(ws, 'tasksets', 'math.jsonl'), '{"id":"a","prompt":"1+1?","answer":"2"}\n');
  s = await startSession(ws, E2E_SETTINGS);
});

after(async () => {
  await s?.close();
});

test('Import Model… -> the HF-cache model -> its card in the Models view', async () => {
  const { page } = s;
  await page.locator('.activitybar [aria-label^="RFT Studio"]').first().click({ timeout: 60_000 });
  await page.locator('.pane-header', { hasText: 'Models' }).first().waitFor({ timeout: 90_000 });
  await runCommand(page, 'RFT Studio: Import Model…');
  const t0 = Date.now();
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: 'acme/tiny-qwen2' }).first();
  await row.waitFor({ timeout: 60_000 });
  await s.shot('20-import-model-pick');
  await row.click();
  const card = page.locator('.monaco-list-row', { hasText: 'Qwen2ForCausalLM · 4.88M · F32' }).first();
  await card.waitFor({ timeout: 120_000 });
  timing('Import Model: pick -> card in the Models view', t0);
  for (const [label, value] of [
    ['Size', '4.88M parameters'],
    ['dtype', 'F32'],
    ['Tokenizer', 'chat template'],
    ['Training', 'no run config uses it yet'],
  ]) {
    const r = page.locator('.monaco-list-row', { hasText: label }).filter({ hasText: value! }).first();
    await r.waitFor({ timeout: 30_000 });
  }
  await s.shot('21-model-card-dark');
  const saved = JSON.parse(readFileSync(join(ws, '.rft', 'models.json'), 'utf8')) as { models: { name: string }[] };
  assert.deepEqual(
    saved.models.map((m) => m.name),
    ['acme/tiny-qwen2'],
  );
});
