// End to end in a real VS Code (code-server + chromium): a taskset with a bad line shows in
// Problems, fixing it clears it; the experience browser opens on a pre-filled buffer; promoting
// an experience with an edited response raises the expert count in the sidebar.
// Training start / stop / resume are left out until the coordinator is wired to the server.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeBuffer } from '../../tools/make-buffer.js';
import { E2E_SETTINGS, runCommand, startSession, type Session, showProblems, test } from './code-server.js';

let s: Session;
let ws: string;
const BAD =
  '{"id":"a","prompt":"What is 1+1?","answer":"2"}\n{"id":"b","prompt":"","answer":"3"}\n{"id":"c","prompt":"What is 2+2?","answer":"4"}\n';
const GOOD =
  '{"id":"a","prompt":"What is 1+1?","answer":"2"}\n{"id":"b","prompt":"What is 3-1?","answer":"2"}\n{"id":"c","prompt":"What is 2+2?","answer":"4"}\n';

before(async () => {
  ws = mkdtempSync(join(tmpdir(), 'rft-e2e-ws-'));
  mkdirSync(join(ws, 'tasksets'));
  mkdirSync(join(ws, '.vscode'));
  writeFileSync(join(ws, 'tasksets', 'math.jsonl'), BAD);
  mkdirSync(join(ws, '.rft', 'runs', 'demo'), { recursive: true });
  await makeBuffer(500, join(ws, '.rft', 'runs', 'demo'));
  writeFileSync(
    join(ws, '.vscode', 'settings.json'),
    JSON.stringify({ 'rftStudio.bufferPath': '.rft/runs/demo/buffer.db' }),
  );
  s = await startSession(ws, E2E_SETTINGS);
});

after(async () => {
  await s?.close();
});

test('the workbench opens the workspace and RFT Studio activates', async () => {
  const { page } = s;
  await page.locator('.activitybar [aria-label^="RFT Studio"]').first().click({ timeout: 60_000 });
  await page.locator('.monaco-list-row', { hasText: 'Usual experiences' }).first().waitFor({ timeout: 90_000 });
  const usual = await page.locator('.monaco-list-row', { hasText: 'Usual experiences' }).first().innerText();
  assert.match(usual, /500/);
  const expert = await page.locator('.monaco-list-row', { hasText: 'Expert experiences' }).first().innerText();
  assert.match(expert, /Expert experiences\s*0$/);
  await s.shot('01-sidebar-buffer-counts');
});

test('a bad taskset line shows in Problems at its line', async () => {
  const { page } = s;
  await showProblems(page);
  const row = page.locator('.markers-panel .monaco-list-row', { hasText: "field 'prompt'" }).first();
  await row.waitFor({ timeout: 60_000 });
  assert.match(await row.innerText(), /\[Ln 2, Col 1\]/);
  await s.shot('02-problems-bad-line');
});

test('fixing the line clears the problem', async () => {
  const { page } = s;
  writeFileSync(join(ws, 'tasksets', 'math.jsonl'), GOOD);
  await page
    .locator('.markers-panel .monaco-list-row', { hasText: "field 'prompt'" })
    .first()
    .waitFor({ state: 'detached', timeout: 60_000 });
  await s.shot('03-problems-fixed');
});

test('the experience browser opens on the pre-filled buffer; promote one with an edited response; the expert count goes up', async () => {
  const { page } = s;
  await runCommand(page, 'RFT Studio: Open Experience Browser');
  const frame = page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
  await frame.locator('.vlist-row[data-id]').first().waitFor({ timeout: 60_000 });
  assert.match(await frame.locator('.count').innerText(), /500 experiences/);
  await s.shot('04-experience-browser');

  await frame.locator('.vlist-row[data-id]').first().click();
  await frame.locator('.detail h2').waitFor();
  const id = await frame.locator('.detail h2').innerText();
  await frame.locator('.detail .tok').first().waitFor();
  await frame.locator('.detail .tok').nth(1).hover();
  await s.shot('05-detail-tokens');

  await frame.locator('#edit-promote').click();
  await frame.locator('#edit-text textarea').fill('the answer is 42');
  await s.shot('06-edit-response');
  await frame.locator('#edit-confirm').click();
  await frame.locator('.message', { hasText: `Promoted an edited response of ${id}` }).waitFor({ timeout: 30_000 });

  const expertRow = page.locator('.monaco-list-row', { hasText: 'Expert experiences' }).first();
  await page.waitForFunction(
    () => {
      const rows = Array.from(document.querySelectorAll('.monaco-list-row')).filter((r) =>
        r.textContent?.includes('Expert experiences'),
      );
      return rows.some((r) => /Expert experiences\s*1$/.test((r.textContent ?? '').trim()));
    },
    undefined,
    { timeout: 30_000 },
  );
  assert.match((await expertRow.innerText()).trim(), /Expert experiences\s*1$/);
  // The browser lists the new expert experience too (newest first).
  await frame.locator('.counts', { hasText: '1 expert' }).waitFor({ timeout: 30_000 });
  await frame.locator('.vlist-row[data-id*="~expert~"]').first().waitFor({ timeout: 30_000 });
  await s.shot('07-expert-count-up');
});
