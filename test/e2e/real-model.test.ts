// End to end in a real VS Code (code-server + chromium), on a model of real vocabulary size (issue 23
// item 8): a Qwen2-layout folder in the Hugging Face cache with the real Qwen tokenizer (151,669
// tokens; vocab_size 151,936 as Qwen saves it) -> Import Model… -> "Start Training" on the toast ->
// LoRA -> the template's config at its own sizes (4 tasks x 4 samples, batch 16) on the user's
// taskset of 24 tasks and no eval file (10% held out) -> the run trains -> the browser's token view
// shows the response as text, not ids -> an edited response promoted is re-tokenised by the run's
// tokenizer -> Stop -> Export Checkpoint… as PEFT: adapter_config.json names the model
// the run started from.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import { makeHubEntry, TINY_QWEN2 } from '../../tools/hf-model.js';
import {
  E2E_SETTINGS,
  runCommand,
  startSession,
  timing,
  until,
  type Session,
  stopLeftRuns,
  test,
} from './code-server.js';

let s: Session;
let ws: string;
let modelDir: string;
const REV = '89abcdef0123456789abcdef0123456789abcdef';
type RunRow = { id: string; status: string; dbPath: string; dir: string };
const runs = (): RunRow[] =>
  existsSync(join(ws, '.rft', 'runs.json'))
    ? (JSON.parse(readFileSync(join(ws, '.rft', 'runs.json'), 'utf8')) as { runs: RunRow[] }).runs
    : [];

before(async () => {
  const cache = mkdtempSync(join(tmpdir(), 'rft-e2e-hub151k-'));
  modelDir = makeHubEntry(cache, 'acme/qwen2-151k', REV, { ...TINY_QWEN2, intermediate: 64 }).snapshot;
  process.env.HF_HUB_CACHE = cache;
  ws = mkdtempSync(join(tmpdir(), 'rft-e2e-real-'));
  mkdirSync(join(ws, 'tasksets'));
  const lines: string[] = [];
  for (let i = 0; i < 24; i++)
    lines.push(JSON.stringify({ id: `t${i}`, prompt: `What is ${i} + ${i + 3}?`, answer: String(2 * i + 3) }));
  writeFileSync(join(ws, 'tasksets', 'math.jsonl'), lines.join('\n') + '\n');
  s = await startSession(ws, E2E_SETTINGS);
});

after(async () => {
  if (ws) stopLeftRuns(ws);
  await s?.close();
});

test(
  'a 151k-vocabulary Qwen2 model from the editor: import -> LoRA run at the template sizes -> token view as text -> promote edited -> stop -> PEFT export naming the base',
  { timeout: 1_500_000 },
  async () => {
    const { page } = s;
    await page.locator('.activitybar [aria-label^="RFT Studio"]').first().click({ timeout: 60_000 });
    await page.locator('.pane-header', { hasText: 'Models' }).first().waitFor({ timeout: 90_000 });

    await runCommand(page, 'RFT Studio: Import Model…');
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'acme/qwen2-151k' })
      .first()
      .click({ timeout: 60_000 });
    const toast = page
      .locator('.notifications-toasts .notification-toast', { hasText: 'Imported acme/qwen2-151k' })
      .first();
    await toast.waitFor({ timeout: 120_000 });
    await toast.locator('.monaco-button', { hasText: 'Start Training' }).first().click();
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'LoRA (rank' })
      .first()
      .click({ timeout: 30_000 });
    const t0 = Date.now();
    const run = await until(
      () => runs().find((r) => r.status === 'running' || r.status === 'completed'),
      'the run to start',
      180_000,
    );
    timing('151k model: LoRA picked -> run started', t0);
    const configs = readdirSync(ws).filter((f) => f.endsWith('.rft.yaml'));
    assert.equal(configs.length, 1, `one config written: ${configs.join(', ')}`);
    const config = readFileSync(join(ws, configs[0]!), 'utf8');
    assert.match(config, /batch_size: 16/);
    assert.match(config, /tasks_per_step: 4/);
    assert.match(config, /repeat_times: 4/);
    assert.match(config, /lora:/);
    assert.doesNotMatch(config, /^eval:/m, 'the template wrote no eval: the run holds out a share of the taskset');

    // The trainer takes steps on the 151k vocabulary (no wasm abort; the chunked head).
    const steps = () =>
      existsSync(join(run.dir, 'metrics.jsonl'))
        ? readFileSync(join(run.dir, 'metrics.jsonl'), 'utf8')
            .split('\n')
            .filter((l) => l.includes('"kind":"train"')).length
        : 0;
    await until(() => steps() >= 2 || undefined, 'two trainer steps', 600_000);
    timing('151k model: run started -> 2 trainer steps', t0);

    // The token view: the response as text pieces of the Qwen tokenizer, not ⟨ids⟩.
    await runCommand(page, 'RFT Studio: Open Experience Browser');
    const f = page.frameLocator('iframe.webview.ready >> nth=-1').frameLocator('iframe#active-frame');
    const row = f.locator('.vlist-row[data-id]:not([data-id*="~expert~"])').first();
    await row.waitFor({ timeout: 180_000 });
    await row.click();
    await f.locator('.detail .tokens .tok').first().waitFor({ timeout: 30_000 });
    const pieces = await f.locator('.detail .tokens .tok').allInnerTexts();
    assert.ok(pieces.length > 0);
    const asIds = pieces.filter((p) => /^⟨\d+⟩$/.test(p.trim()));
    assert.equal(asIds.length, 0, `token pieces shown as ids: ${asIds.slice(0, 5).join(' ')}`);
    await s.shot('50-real-model-token-view');

    // An edited response promoted: re-tokenised by the checkpoint's (Qwen) tokenizer.
    const id = (await f.locator('.detail h2').innerText()).trim();
    await f.locator('#edit-promote').click();
    await f.locator('#edit-text textarea').fill('The answer is 42');
    await f.locator('#edit-confirm').click();
    await f.locator('.message', { hasText: `Promoted an edited response of ${id}` }).waitFor({ timeout: 60_000 });
    await s.shot('51-real-model-promoted-edited');
    const store = new SqliteStore(run.dbPath);
    try {
      const expert = await until(
        async () =>
          (await store.list({ source: 'expert', limit: 50 })).find((e) => e.responseText === 'The answer is 42'),
        'the promoted expert in the buffer',
        60_000,
      );
      // Qwen's byte-level BPE: a handful of tokens, not one per character (the char tokenizer's 16).
      assert.ok(
        expert.responseTokens.length >= 3 && expert.responseTokens.length <= 8,
        `re-tokenised by the Qwen tokenizer: ${expert.responseTokens.length} tokens`,
      );
      assert.ok(
        expert.responseTokens.some((t) => t > 1000),
        'ids of the real vocabulary',
      );
    } finally {
      await store.close();
    }

    // Stop from the palette (the template's 50 steps would take minutes more): the run keeps its
    // checkpoints, and the last one is exported. (Stop waits for the step in flight: minutes on a
    // loaded 2-core machine with a 151k head.)
    await runCommand(page, 'RFT Studio: Stop Training');
    // The run pick lists runs by name, with status, step, start time and id (run-picks.ts).
    await page.locator('.quick-input-list .monaco-list-row', { hasText: run.id }).first().click({ timeout: 30_000 });
    const ended = await until(
      () => runs().find((r) => r.id === run.id && r.status !== 'running'),
      'the run to stop',
      600_000,
    );
    assert.equal(ended.status, 'stopped');
    assert.ok(steps() >= 2, `trained ${steps()} steps`);

    // Export Checkpoint… as PEFT: the adapter names the model the run started from.
    await runCommand(page, 'RFT Studio: Export Checkpoint…');
    await page.locator('.quick-input-list .monaco-list-row').first().waitFor({ timeout: 30_000 });
    await page.keyboard.press('Enter');
    const peft = page.locator('.quick-input-list .monaco-list-row', { hasText: /PEFT/ }).first();
    await peft.click({ timeout: 60_000 });
    // code-server's folder dialog: a path box starting at the workspace; Enter accepts it.
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: 30_000 });
    await page.waitForTimeout(500);
    await page.keyboard.press('Enter');
    const exported = page.locator('.notifications-toasts .notification-toast', { hasText: /Exported .* as / }).first();
    await exported.waitFor({ timeout: 180_000 });
    await s.shot('52-real-model-peft-exported');
    const out = readdirSync(ws)
      .map((d) => join(ws, d))
      .find((d) => existsSync(join(d, 'adapter_config.json')));
    assert.ok(out, `a PEFT folder in the workspace: ${readdirSync(ws).join(', ')}`);
    const adapter = JSON.parse(readFileSync(join(out, 'adapter_config.json'), 'utf8')) as {
      base_model_name_or_path: string;
    };
    assert.ok(
      adapter.base_model_name_or_path === 'acme/qwen2-151k' || adapter.base_model_name_or_path === modelDir,
      `base_model_name_or_path: ${adapter.base_model_name_or_path}`,
    );
  },
);
