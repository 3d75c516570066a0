// End to end in a real VS Code (code-server + chromium), issue 27 item 6: with `rftStudio.engine: webgpu`
// the status bar names the GPU engine and its adapter. CI has no GPU, so Dawn's adapter here is SwiftShader
// (RFT_WEBGPU_SWIFTSHADER=1, chromium's Vulkan driver): the item says "GPU (emulated)" and its tooltip
// names the adapter as a CPU fallback. The screenshot is the "Show" for the status bar.
// Then the setting changed to cpu: the offered Restart Backend applies it (issue 40 item 2).
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SWIFTSHADER_ICD } from '../../backend/model/webgpu.js';
import { E2E_SETTINGS, startSession, timing, type Session, test } from './code-server.js';

let s: Session | undefined;
let ws = '';
const skip = existsSync(SWIFTSHADER_ICD) ? false : `no SwiftShader Vulkan driver at ${SWIFTSHADER_ICD}`;

before(async () => {
  if (skip) return;
  ws = mkdtempSync(join(tmpdir(), 'rft-e2e-engine-'));
  writeFileSync(join(ws, 'data.jsonl'), '{"prompt": "1+1?", "answer": "2"}\n');
  // A config activates the extension (workspaceContains:**/*.rft.yaml).
  writeFileSync(join(ws, 'train.rft.yaml'), 'name: mine\ntaskset:\n  path: data.jsonl\n');
  // Inherited by code-server, its extension host and the backend the extension starts.
  process.env.RFT_WEBGPU_SWIFTSHADER = '1';
  s = await startSession(ws, { ...E2E_SETTINGS, 'rftStudio.engine': 'webgpu' });
});

after(async () => {
  await s?.close();
  delete process.env.RFT_WEBGPU_SWIFTSHADER;
});

test('rftStudio.engine webgpu: the status bar shows the GPU engine, the tooltip its adapter', { skip }, async () => {
  const { page } = s!;
  const t0 = Date.now();
  await page.locator('.activitybar [aria-label^="RFT Studio"]').first().waitFor({ timeout: 120_000 });
  const item = page.locator('.statusbar-item', { hasText: 'GPU (emulated)' }).first();
  await item.waitFor({ timeout: 180_000 });
  timing('window open -> the status bar names the engine', t0);
  assert.match(await item.innerText(), /RFT · GPU \(emulated\)/);
  await item.hover();
  const hover = page.locator('.monaco-hover, .workbench-hover', { hasText: 'Engine: webgpu' }).first();
  await hover.waitFor({ timeout: 30_000 });
  const tip = await hover.innerText();
  assert.match(tip, /Engine: webgpu \(rftStudio\.engine \/ RFT_BACKEND: webgpu\)/);
  assert.match(tip, /swiftshader/i);
  assert.match(tip, /a CPU fallback, not a GPU/);
  await s!.shot('50-status-bar-engine-webgpu');
});

test(
  'rftStudio.engine changed to cpu: the offered Restart Backend applies it and the status bar follows (issue 40 item 2)',
  { skip },
  async () => {
    const { page } = s!;
    await page.locator('.statusbar-item', { hasText: 'GPU (emulated)' }).first().waitFor({ timeout: 180_000 });
    // The setting changed on disk (workspace settings), as the settings editor would write it.
    mkdirSync(join(ws, '.vscode'), { recursive: true });
    writeFileSync(join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'rftStudio.engine': 'cpu' }));
    const t0 = Date.now();
    const toast = page
      .locator('.notifications-toasts .notification-toast', { hasText: "rftStudio.engine is now 'cpu'" })
      .first();
    await toast.waitFor({ timeout: 60_000 });
    await toast.locator('a.monaco-button, .monaco-button', { hasText: 'Restart Backend' }).first().click();
    // The restarted backend runs on the CPU engine: the GPU mark goes, the tooltip names RFT_BACKEND=wasm.
    await page.locator('.statusbar-item', { hasText: 'GPU' }).first().waitFor({ state: 'detached', timeout: 120_000 });
    timing('Restart Backend after rftStudio.engine: cpu -> the status bar without the GPU', t0);
    const item = page.locator('.statusbar-item', { hasText: 'RFT' }).first();
    await item.hover();
    const hover = page.locator('.monaco-hover, .workbench-hover', { hasText: 'Engine: cpu' }).first();
    await hover.waitFor({ timeout: 30_000 });
    assert.match(await hover.innerText(), /Engine: cpu \(rftStudio\.engine \/ RFT_BACKEND: wasm\)/);
    await s!.shot('51-status-bar-engine-after-restart');
  },
);
