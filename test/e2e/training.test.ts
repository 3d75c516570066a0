// End to end in a real VS Code (code-server + chromium), with a real (tiny) training run:
// start training from the palette -> experiences appear in the sidebar and the browser -> promote
// one with an edited (correct) response -> the expert count goes up and the trainer samples it
// (its use count in the run's buffer) -> pass rates show above the taskset lines -> stop -> resume.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import { builtinTasksets } from '../../backend/explorer/tasksets/index.js';
import { tinyRunConfig } from '../server/tiny-run-config.js';
import { runCommand, startSession, type Session } from './code-server.js';

let s: Session;
let ws: string;
const runs = () => (JSON.parse(readFileSync(join(ws, '.rft', 'runs.json'), 'utf8')) as { runs: { id: string; status: string; dbPath: string }[] }).runs;
async function until<T>(fn: () => T | Promise<T>, what: string, ms = 120_000): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await (async () => fn())().catch(() => undefined);
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
const sidebarCount = async (label: string) => {
  const t = await s.page.locator('.monaco-list-row', { hasText: label }).first().innerText();
  // Counts are written with grouped digits (3,360).
  return Number((/([\d,]+)\s*$/.exec(t.trim())?.[1] ?? 'NaN').replace(/,/g, ''));
};

before(async () => {
  ws = mkdtempSync(join(tmpdir(), 'rft-e2e-train-'));
  mkdirSync(join(ws, 'tasksets'));
  // The run trains on the built-in reverse tasks; the workspace taskset holds the same tasks (ids
  // match), so the pass-rate CodeLens has something to show.
  const tasks = builtinTasksets.get('reverse').generate(200, 0, 'train').slice(0, 40);
  writeFileSync(join(ws, 'tasksets', 'reverse.jsonl'), tasks.map((t) => JSON.stringify({ id: t.id, prompt: t.prompt, answer: t.answer })).join('\n') + '\n');
  writeFileSync(join(ws, 'tiny.rft.yaml'), tinyRunConfig({ warmupSteps: 10, mixSeconds: 600 }));
  s = await startSession(ws, {
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'security.workspace.trust.enabled': false,
    'extensions.ignoreRecommendations': true,
    'telemetry.telemetryLevel': 'off',
    'workbench.colorTheme': 'Default Dark Modern',
    'rftStudio.nodePath': process.execPath,
  });
});

after(async () => {
  // Never leave a run behind.
  try {
    for (const r of runs()) if (r.status === 'running') process.kill(Number(readFileSync(join(ws, '.rft', 'runs', r.id, 'run.pid'), 'utf8')), 'SIGTERM');
  } catch {
    /* none */
  }
  await s?.close();
});

test('training: start -> experiences -> promote edited -> sampled -> pass rates -> stop -> resume', { timeout: 540_000 }, async () => {
  const { page } = s;
  await page.locator('.activitybar [aria-label^="RFT Studio"]').first().click({ timeout: 60_000 });
  await page.locator('.monaco-list-row', { hasText: 'No buffer open' }).first().waitFor({ timeout: 90_000 });

  await runCommand(page, 'RFT Studio: Start Training');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'tiny.rft.yaml' }).first().click({ timeout: 30_000 });
  const run = await until(() => runs().find((r) => r.status === 'running'), 'the run to start');
  await s.shot('10-training-started-dashboard');

  // Experiences appear in the sidebar (live buffer counts) ...
  await until(async () => (await sidebarCount('Usual experiences')) > 0, 'usual experiences in the sidebar');
  const experts0 = await sidebarCount('Expert experiences');
  assert.equal(experts0, 16, 'the config puts 16 expert demonstrations in the buffer');
  await s.shot('11-sidebar-live-counts');

  // ... and in the browser.
  await runCommand(page, 'RFT Studio: Open Experience Browser');
  const frame = page.frameLocator('iframe.webview.ready >> nth=-1').frameLocator('iframe#active-frame');
  await frame.locator('.vlist-row[data-id]').first().waitFor({ timeout: 60_000 });
  await s.shot('12-browser-live');
  await frame.locator('.vlist-row[data-id]:not([data-id*="~expert~"])').first().click();
  await frame.locator('.detail h2').waitFor();
  const id = (await frame.locator('.detail h2').innerText()).trim();
  const store = new SqliteStore(run.dbPath);
  try {
    const exp = await store.get(id);
    assert.ok(exp, `experience ${id} in the run's buffer`);
    const edited = [...exp.promptText.replace(/^rev /, '')].reverse().join('');
    await frame.locator('#edit-promote').click();
    await frame.locator('#edit-text textarea').fill(edited);
    await frame.locator('#edit-confirm').click();
    await frame.locator('.message', { hasText: `Promoted an edited response of ${id}` }).waitFor({ timeout: 30_000 });
    await until(async () => (await sidebarCount('Expert experiences')) === experts0 + 1, 'the expert count to go up', 30_000);
    await s.shot('13-promoted-expert-count-up');

    // The trainer samples it: its use count in the buffer goes above 0.
    const promoted = await until(async () => (await store.list({ source: 'expert', limit: 100 })).find((e) => e.responseText === edited && e.useCount > 0), 'the promoted expert to be sampled', 120_000);
    assert.ok(promoted.useCount > 0);
  } finally {
    await store.close();
  }

  // Pass rates above the taskset lines.
  await runCommand(page, 'Go to File');
  await page.keyboard.type('reverse.jsonl');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'reverse.jsonl' }).first().click({ timeout: 30_000 });
  await page.locator('.codelens-decoration', { hasText: 'passed' }).first().waitFor({ timeout: 60_000 });
  await s.shot('14-taskset-pass-rate-codelens');

  // Stop, then resume.
  await runCommand(page, 'RFT Studio: Stop Training');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'tiny' }).first().click({ timeout: 30_000 });
  await until(() => runs().find((r) => r.id === run.id && r.status === 'stopped'), 'the run to stop');
  await page.locator('.monaco-list-row', { hasText: 'stopped' }).first().waitFor({ timeout: 30_000 });
  await s.shot('15-stopped');
  await runCommand(page, 'RFT Studio: Resume Training');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'tiny' }).first().click({ timeout: 30_000 });
  await until(() => runs().find((r) => r.id === run.id && r.status === 'running'), 'the run to resume');
  await s.shot('16-resumed');
});
