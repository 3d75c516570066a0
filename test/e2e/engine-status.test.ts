// End to end in a real VS Code (code-server + chromium), issue 27 item 6: with `rftStudio.engine: webgpu`
// the status bar names the GPU engine and its adapter. CI has no GPU, so Dawn's adapter here is SwiftShader
// (RFT_WEBGPU_SWIFTSHADER=1, chromium's Vulkan driver): the item says "GPU (emulated)" and its tooltip
// names the adapter as a CPU fallback. The screenshot is the "Show" for the status bar.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SWIFTSHADER_ICD } from '../../backend/model/webgpu.js';
import { E2E_SETTINGS, startSession, timing, type Session, test } from './code-server.js';

let s: Session | undefined;
const skip = existsSync(SWIFTSHADER_ICD) ? false : `no SwiftShader Vulkan driver at ${SWIFTSHADER_ICD}`;

before(async () => {
  if (skip) return;
  const ws = mkdtempSync(join(tmpdir(), 'rft-e2e-engine-'));
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
