// End to end in a real VS Code (code-server + chromium), with a real (tiny) training run:
// start training from the palette -> experiences appear in the sidebar and the browser -> promote
// one with an edited (correct) response -> the expert count goes up and the trainer samples it
// (its use count in the run's buffer) -> a selection longer than the model's max_seq_len added as
// expert is refused with a message while the run goes on stepping -> pass rates show above the taskset lines -> stop -> resume.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import { builtinTasksets } from '../../backend/explorer/tasksets/index.js';
import { tinyRunConfig } from '../server/tiny-run-config.js';
import {
  E2E_SETTINGS,
  openFile,
  runCommand,
  sidebarCount as sidebarCountOf,
  startSession,
  until,
  type Session,
  stopLeftRuns,
  test,
} from './code-server.js';

let s: Session;
let ws: string;
const runs = () =>
  (
    JSON.parse(readFileSync(join(ws, '.rft', 'runs.json'), 'utf8')) as {
      runs: { id: string; status: string; dbPath: string }[];
    }
  ).runs;
const sidebarCount = (label: string) => sidebarCountOf(s.page, label);
const trainSteps = (runId: string) =>
  readFileSync(join(ws, '.rft', 'runs', runId, 'metrics.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.includes('"kind":"train"')).length;

before(async () => {
  ws = mkdtempSync(join(tmpdir(), 'rft-e2e-train-'));
  mkdirSync(join(ws, 'tasksets'));
  // The run trains on the built-in reverse tasks; the workspace taskset holds the same tasks (ids
  // match), so the pass-rate CodeLens has something to show.
  const tasks = builtinTasksets.get('reverse').generate(200, 0, 'train').slice(0, 40);
  writeFileSync(
    join(ws, 'tasksets', 'reverse.jsonl'),
    tasks.map((t) => JSON.stringify({ id: t.id, prompt: t.prompt, answer: t.answer })).join('\n') + '\n',
  );
  writeFileSync(join(ws, 'tiny.rft.yaml'), tinyRunConfig({ warmupSteps: 10, mixSeconds: 600 }));
  // Text a user might select as an expert answer: far longer than the tiny model's max_seq_len 64.
  writeFileSync(join(ws, 'long-answer.txt'), 'the reversed word is '.repeat(12) + '\n');
  s = await startSession(ws, E2E_SETTINGS);
});

after(async () => {
  if (ws) stopLeftRuns(ws);
  await s?.close();
});

test(
  'training: start -> experiences -> promote edited -> sampled -> pass rates -> stop -> resume',
  { timeout: 540_000 },
  async () => {
    const { page } = s;
    await page.locator('.activitybar [aria-label^="RFT Studio"]').first().click({ timeout: 60_000 });
    await page.locator('.monaco-list-row', { hasText: 'No buffer open' }).first().waitFor({ timeout: 90_000 });

    await runCommand(page, 'RFT Studio: Start Training');
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'tiny.rft.yaml' })
      .first()
      .click({ timeout: 30_000 });
    const run = await until(() => runs().find((r) => r.status === 'running'), 'the run to start');
    await s.shot('20-training-started-dashboard');

    // Experiences appear in the sidebar (live buffer counts) ...
    await until(async () => (await sidebarCount('Usual experiences')) > 0, 'usual experiences in the sidebar');
    const experts0 = await sidebarCount('Expert experiences');
    assert.equal(experts0, 16, 'the config puts 16 expert demonstrations in the buffer');
    await s.shot('21-sidebar-live-counts');

    // ... and in the browser.
    await runCommand(page, 'RFT Studio: Open Experience Browser');
    const frame = page.frameLocator('iframe.webview.ready >> nth=-1').frameLocator('iframe#active-frame');
    await frame.locator('.vlist-row[data-id]').first().waitFor({ timeout: 60_000 });
    await s.shot('22-browser-live');
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
      await until(
        async () => (await sidebarCount('Expert experiences')) === experts0 + 1,
        'the expert count to go up',
        30_000,
      );
      await s.shot('23-promoted-expert-count-up');

      // The trainer samples it: its use count in the buffer goes above 0.
      const promoted = await until(
        async () =>
          (await store.list({ source: 'expert', limit: 100 })).find((e) => e.responseText === edited && e.useCount > 0),
        'the promoted expert to be sampled',
        120_000,
      );
      assert.ok(promoted.useCount > 0);
    } finally {
      await store.close();
    }

    // A selection longer than the model's max_seq_len added as expert: refused at the door with the
    // numbers; nothing enters the buffer; the run goes on stepping.
    const experts1 = await sidebarCount('Expert experiences');
    await openFile(page, 'long-answer.txt');
    await page.locator('.monaco-editor .view-lines').first().click();
    await page.keyboard.press('Control+A');
    await runCommand(page, 'RFT Studio: Add Selection as Expert Example');
    // The task pick (the buffer's tasks, or a new one), then the new task's id and prompt.
    for (const answer of ['A new task', 'rev-long', 'rev abc']) {
      await page.locator('.quick-input-widget input').waitFor({ state: 'visible' });
      await page.waitForTimeout(300);
      await page.keyboard.type(answer);
      await page.waitForTimeout(300);
      await page.keyboard.press('Enter');
    }
    const refusal = page.locator('.notifications-toasts .notification-toast', { hasText: 'max_seq_len 64' }).first();
    await refusal.waitFor({ timeout: 60_000 });
    assert.match(await refusal.innerText(), /Add expert example: .*shorten it by \d+ tokens/s);
    await page.waitForTimeout(1000); // the toast slides in
    // The message is longer than a toast line: expand it so the screenshot shows the numbers.
    await refusal.hover();
    await refusal
      .locator('.codicon-notifications-expand')
      .first()
      .click({ timeout: 5_000 })
      .catch(() => undefined);
    await page.waitForTimeout(500);
    await s.shot('24-selection-too-long-refused');
    const stepsAtRefusal = trainSteps(run.id);
    await until(() => trainSteps(run.id) >= stepsAtRefusal + 3, 'three more training steps after the refusal', 180_000);
    assert.equal(runs().find((r) => r.id === run.id)?.status, 'running', 'the run goes on');
    assert.equal(await sidebarCount('Expert experiences'), experts1, 'nothing was added');

    // Pass rates above the taskset lines.
    await openFile(page, 'reverse.jsonl');
    await page.locator('.codelens-decoration', { hasText: 'passed' }).first().waitFor({ timeout: 60_000 });
    await s.shot('25-taskset-pass-rate-codelens');

    // Stop, then resume.
    await runCommand(page, 'RFT Studio: Stop Training');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'tiny' }).first().click({ timeout: 30_000 });
    await until(() => runs().find((r) => r.id === run.id && r.status === 'stopped'), 'the run to stop');
    await page.locator('.monaco-list-row', { hasText: 'stopped' }).first().waitFor({ timeout: 30_000 });
    await s.shot('26-stopped');
    await runCommand(page, 'RFT Studio: Resume Training');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'tiny' }).first().click({ timeout: 30_000 });
    await until(() => runs().find((r) => r.id === run.id && r.status === 'running'), 'the run to resume');
    await s.shot('27-resumed');
  },
);
