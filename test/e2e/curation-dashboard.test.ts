// End to end in a real VS Code (code-server + chromium), the flows of the "extension as a person
// uses it" issue: a narrowed filter leaves only matching rows in the DOM; bulk promote shows a
// preview and asks before it promotes; a config with problems is refused with its problems in
// Problems; the dashboard revealed mid-run has the run's whole history and follows live points; a
// run that fails says why in a notification with Show Log; a window reload mid-run brings the
// dashboard back with its run (issue 40 item 8). Light and dark screenshots.
// The "run" here is a registry entry whose metrics.jsonl this test writes step by step (the
// backend polls it exactly as it polls a real run's): a real training run is training.test.ts.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeBuffer } from '../../tools/make-buffer.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import {
  E2E_SETTINGS,
  runCommand,
  sidebarCount,
  startSession,
  timing,
  until,
  type Session,
  showProblems,
  test,
} from './code-server.js';

let s: Session;
let ws: string;
let reg: RunRegistry;
let metrics: string;
const RUN = 'live-demo';

function writeSteps(from: number, to: number): void {
  let out = '';
  for (let step = from; step < to; step++) {
    out +=
      JSON.stringify({
        kind: 'explore',
        step,
        t: 1_700_000_000_000 + step,
        reward_mean: Math.round(100 * (0.1 + 0.6 * (step / 300))) / 100,
      }) + '\n';
    out +=
      JSON.stringify({
        kind: 'train',
        step,
        t: 1_700_000_000_000 + step,
        loss: 2 / (1 + step / 50),
        policy_loss: 0.5 / (1 + step / 50),
        tokens_per_s: 2000 + step,
      }) + '\n';
    if (step % 50 === 0)
      out += JSON.stringify({ kind: 'eval', step, t: 1_700_000_000_000 + step, accuracy: step / 400 }) + '\n';
  }
  appendFileSync(metrics, out);
}

before(async () => {
  ws = mkdtempSync(join(tmpdir(), 'rft-e2e-ws-'));
  mkdirSync(join(ws, 'tasksets'));
  mkdirSync(join(ws, '.vscode'));
  writeFileSync(join(ws, 'tasksets', 'math.jsonl'), '{"id":"a","prompt":"What is 1+1?","answer":"2"}\n');
  writeFileSync(
    join(ws, 'bad.rft.yaml'),
    'name: bad\ntaskset:\n  path: tasksets/math.jsonl\nworkflow: {}\ntrainr:\n  lr: 0.001\n',
  );
  mkdirSync(join(ws, '.rft', 'runs', 'demo'), { recursive: true });
  await makeBuffer(500, join(ws, '.rft', 'runs', 'demo'));
  writeFileSync(
    join(ws, '.vscode', 'settings.json'),
    JSON.stringify({ 'rftStudio.bufferPath': '.rft/runs/demo/buffer.db' }),
  );
  reg = await RunRegistry.open(ws);
  await reg.create({ id: RUN, name: 'live demo', config: { name: 'live demo', trainer: { steps: 400 } } });
  await reg.setStatus(RUN, 'running');
  mkdirSync(join(ws, '.rft', 'runs', RUN), { recursive: true });
  metrics = join(ws, '.rft', 'runs', RUN, 'metrics.jsonl');
  writeSteps(0, 300);
  s = await startSession(ws, E2E_SETTINGS);
});

after(async () => {
  await s?.close();
});

const browserFrame = () => s.page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');

/** Widths in the browser as drawn (px): the list and detail panes, a row, its response cell and the cells beside it. */
async function listWidths() {
  // No named helpers inside: the page evaluates the function's text, without tsx's __name.
  return browserFrame()
    .locator('.main')
    .evaluate((main) => {
      const row = main.querySelector('.vlist-row[data-id]')!;
      const others = Array.from(row.children).filter((c) => !c.classList.contains('resp'));
      const st = getComputedStyle(row);
      const gap = Number.parseFloat(st.columnGap) || 0;
      const pad = Number.parseFloat(st.paddingLeft) + Number.parseFloat(st.paddingRight);
      const rowW = row.getBoundingClientRect().width;
      return {
        main: main.getBoundingClientRect().width,
        list: main.querySelector('.list')!.getBoundingClientRect().width,
        detail: main.querySelector('.detail')!.getBoundingClientRect().width,
        row: rowW,
        resp: row.querySelector('.resp')!.getBoundingClientRect().width,
        // What the response cell could have: the row less its other cells, the gaps and the padding.
        free: rowW - others.reduce((n, c) => n + c.getBoundingClientRect().width, 0) - gap * others.length - pad,
      };
    });
}

test('a narrowed filter: only matching rows exist in the DOM', async () => {
  const { page } = s;
  await page.locator('.activitybar [aria-label^="RFT Studio"]').first().click({ timeout: 60_000 });
  await page.locator('.monaco-list-row', { hasText: 'Usual experiences' }).first().waitFor({ timeout: 90_000 });
  let t0 = Date.now();
  await runCommand(page, 'RFT Studio: Open Experience Browser');
  const f = browserFrame();
  await f.locator('.vlist-row[data-id]').first().waitFor({ timeout: 60_000 });
  timing('open experience browser -> first row', t0);
  assert.match(await f.locator('.count').innerText(), /500 experiences/);
  // Nothing picked yet: the list has the width (the empty detail held 60% and left the response ~160 px).
  const w = await listWidths();
  console.log(JSON.stringify({ e2e: 'widths', when: 'no row picked', ...w }));
  assert.ok(w.list >= 0.9 * w.main, `list ${w.list} px of ${w.main} px`);
  assert.ok(w.resp >= 0.6 * w.list, `response column ${w.resp} px of a ${w.list} px list`);
  assert.ok(Math.abs(w.resp - w.free) <= 2, `response column ${w.resp} px, free in its row ${w.free} px`);
  t0 = Date.now();
  await f.locator('#f-taskId input').fill('t1');
  await f.locator('.count', { hasText: '100 experiences' }).waitFor({ timeout: 30_000 });
  timing('task filter typed -> filtered count (incl. 250 ms debounce)', t0);
  const rows = await f.locator('.vlist-row[data-id]').allInnerTexts();
  assert.ok(rows.length > 0 && rows.length <= 100, `${rows.length} rows in the DOM`);
  for (const r of rows) assert.match(r, /\bt1\b/, `row of another task in the DOM: ${r}`);
  await s.shot('11-filter-narrowed-dark');
});

test('bulk promote: a preview with the count, then a confirmation; the count in the message and the sidebar', async () => {
  const { page } = s;
  const f = browserFrame();
  await f.locator('#f-taskId input').fill('');
  await f.locator('.count', { hasText: '500 experiences' }).waitFor({ timeout: 30_000 });
  await f.locator('#bulk-min input').fill('0.9');
  await f.locator('#bulk-promote').click();
  const preview = f.locator('.bulk-preview');
  await preview.waitFor({ timeout: 30_000 });
  const m = /Promote (\d+) experiences? from (\d+) tasks?/.exec(await preview.innerText());
  assert.ok(m, await preview.innerText());
  const n = Number(m![1]);
  assert.ok(n >= 1 && n <= 5, `top-1 per task of 5 tasks with reward >= 0.9: ${n}`);
  await s.shot('12-bulk-preview-dark');
  await f.locator('#bulk-confirm').click();
  await f.locator('.message', { hasText: `Promoted ${n} experience` }).waitFor({ timeout: 30_000 });
  await page.waitForFunction(
    (want) =>
      Array.from(document.querySelectorAll('.monaco-list-row')).some((r) =>
        new RegExp(`Expert experiences\\s*${want}$`).test((r.textContent ?? '').trim()),
      ),
    n,
    { timeout: 30_000 },
  );
  await s.shot('13-bulk-promoted-dark');
});

test('detail, group, promote -> sidebar (timings for docs/extension.md)', async () => {
  const { page } = s;
  const f = browserFrame();
  // e00498: reward 0.8, so not among the bulk-promoted (reward >= 0.9).
  const row = f.locator('.vlist-row[data-id="e00498"]');
  await row.waitFor({ timeout: 30_000 });
  let t0 = Date.now();
  await row.click();
  await f.locator('.detail h2', { hasText: 'e00498' }).waitFor({ timeout: 30_000 });
  timing('click a row -> its detail', t0);
  // With the detail shown the list keeps half, its response column the row's free width.
  const w = await listWidths();
  console.log(JSON.stringify({ e2e: 'widths', when: 'detail shown', ...w }));
  assert.ok(w.list >= 0.45 * w.main && w.detail >= 0.3 * w.main, `list ${w.list}, detail ${w.detail} of ${w.main} px`);
  assert.ok(Math.abs(w.resp - w.free) <= 2, `response column ${w.resp} px, free in its row ${w.free} px`);
  assert.ok(w.resp >= 0.35 * w.list, `response column ${w.resp} px of a ${w.list} px list`);
  t0 = Date.now();
  await f.locator('#show-group').click();
  await f.locator('.detail .group .sample').first().waitFor({ timeout: 30_000 });
  timing('Compare group -> the group side by side', t0);
  const experts = await sidebarCount(page, 'Expert experiences');
  t0 = Date.now();
  await f.locator('#promote').click();
  await until(
    async () => (await sidebarCount(page, 'Expert experiences')) === experts + 1,
    'the sidebar expert count to go up',
    30_000,
  );
  timing('Promote -> sidebar expert count', t0);
  await f.locator('#show-group').click();
});

test('keys: e puts the keyboard in the edit box, Escape drops the edit and gives the keyboard back to the list (issue 40 item 11)', async () => {
  const { page } = s;
  const f = browserFrame();
  const row = f.locator('.vlist-row[data-id="e00497"]');
  await row.waitFor({ timeout: 30_000 });
  await row.click();
  await f.locator('.detail h2', { hasText: 'e00497' }).waitFor({ timeout: 30_000 });
  await f.locator('.list').focus();
  await page.keyboard.press('e');
  const active = () =>
    f.locator('body').evaluate(() => document.activeElement?.id || document.activeElement?.className);
  await until(async () => (await active()) === 'edit-text', 'the keyboard in the edit box', 10_000);
  const original = await f.locator('#edit-text').evaluate((el) => (el as HTMLTextAreaElement).value);
  // Typed keys go into the box (no shortcut fires: `p` would promote).
  await page.keyboard.type(' pr');
  assert.equal(await f.locator('#edit-text').evaluate((el) => (el as HTMLTextAreaElement).value), `${original} pr`);
  await page.keyboard.press('Escape');
  await f.locator('.editor').waitFor({ state: 'hidden', timeout: 10_000 });
  assert.equal(await f.locator('#edit-text').evaluate((el) => (el as HTMLTextAreaElement).value), original);
  await until(
    async () =>
      String(await active())
        .split(' ')
        .includes('list'),
    'the keyboard back in the list',
    10_000,
  );
});

test('a config with problems: Problems at the key line; Start Training refuses it at once', async () => {
  const { page } = s;
  await page.keyboard.press('Control+P');
  await page.locator('.quick-input-widget input').waitFor({ state: 'visible' });
  await page.keyboard.type('bad.rft.yaml');
  await page
    .locator('.quick-input-list .monaco-list-row', { hasText: 'bad.rft.yaml' })
    .first()
    .waitFor({ timeout: 30_000 });
  await page.keyboard.press('Enter');
  await page.locator('.tabs-container .tab', { hasText: 'bad.rft.yaml' }).first().waitFor({ timeout: 30_000 });
  await showProblems(page);
  const row = page.locator('.markers-panel .monaco-list-row', { hasText: 'trainr' }).first();
  await row.waitFor({ timeout: 60_000 });
  assert.match(await row.innerText(), /\[Ln 5, Col 1\]/);
  await runCommand(page, 'RFT Studio: Start Training');
  await page
    .locator('.quick-input-list .monaco-list-row', { hasText: 'bad.rft.yaml' })
    .first()
    .click({ timeout: 30_000 });
  const toast = page
    .locator('.notifications-toasts .notification-toast', { hasText: 'The run was not started' })
    .first();
  await toast.waitFor({ timeout: 30_000 });
  assert.match(await toast.innerText(), /Show Problems/);
  await s.shot('14-config-refused-dark');
});

test('the dashboard revealed mid-run has the whole history and follows live points', async () => {
  const { page } = s;
  const t0 = Date.now();
  await runCommand(page, 'RFT Studio: Open Training Dashboard');
  const d = s.page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');
  await d.locator('h2', { hasText: 'live demo' }).waitFor({ timeout: 60_000 });
  const reward = d.locator('figure[data-title="Reward"]');
  await reward.locator('.legend', { hasText: 'rollout reward 0.7' }).waitFor({ timeout: 60_000 });
  timing('open dashboard mid-run -> 300 steps of history drawn', t0);
  // Latest value of the history in the legend; hovering the left edge reads step 0 (not only the last steps).
  await reward.locator('.legend', { hasText: 'rollout reward 0.7' }).waitFor({ timeout: 60_000 });
  const box = (await reward.locator('canvas').boundingBox())!;
  await page.mouse.move(box.x + 48.3, box.y + box.height / 2);
  await reward.locator('.hover', { hasText: /^step 0 · rollout reward 0\.1$/ }).waitFor({ timeout: 10_000 });
  await d.locator('figure[data-title="Eval accuracy"] .legend', { hasText: 'held-out accuracy' }).waitFor();
  // The header counts the steps done (the registry entry says 0, as a real run's does between checkpoints).
  await d.locator('.status', { hasText: /^running · step 300$/ }).waitFor({ timeout: 10_000 });
  await s.shot('15-dashboard-mid-run-dark');
  const t1 = Date.now();
  writeSteps(300, 330);
  await d.locator('.status', { hasText: /step 3[1-3]\d/ }).waitFor({ timeout: 60_000 });
  timing('30 steps written to metrics.jsonl -> dashboard header follows (backend polls every 1 s)', t1);
  await page.mouse.move(box.x + box.width - 9, box.y + box.height / 2);
  await reward.locator('.hover', { hasText: /^step 32\d/ }).waitFor({ timeout: 30_000 });
});

test('a window reload mid-run brings the dashboard back with its run; the status bar names the run at once', async () => {
  const { page } = s;
  const t0 = Date.now();
  await runCommand(page, 'Developer: Reload Window');
  // The tab is restored by the extension's WebviewPanelSerializer (onWebviewPanel activation), with its run.
  const d = s.page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');
  await d.locator('h2', { hasText: 'live demo' }).waitFor({ timeout: 120_000 });
  timing('window reload mid-run -> the dashboard back with its run', t0);
  await d.locator('.status', { hasText: /^running · step 3\d\d$/ }).waitFor({ timeout: 60_000 });
  await page.locator('.statusbar-item', { hasText: 'live demo' }).first().waitFor({ timeout: 60_000 });
  timing('window reload mid-run -> the status bar names the run', t0);
  await s.shot('15b-dashboard-after-reload');
});

test('a run that fails: the reason in a notification with Show Log, and on the dashboard', async () => {
  const { page } = s;
  await reg.setStatus(RUN, 'failed', 'sequence of 120 tokens exceeds the model maxSeqLen 96');
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'maxSeqLen 96' }).first();
  await toast.waitFor({ timeout: 60_000 });
  const text = await toast.innerText();
  assert.match(text, /Run live demo failed/);
  assert.match(text, /Show Log/);
  const d = s.page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');
  await d.locator('.reason', { hasText: 'Failed: sequence of 120 tokens' }).waitFor({ timeout: 30_000 });
  await s.shot('16-run-failed-dark');
});

test('light theme: the dashboard and the browser', async () => {
  const { page } = s;
  writeFileSync(
    join(ws, '.vscode', 'settings.json'),
    JSON.stringify({
      'rftStudio.bufferPath': '.rft/runs/demo/buffer.db',
      'workbench.colorTheme': 'Default Light Modern',
    }),
  );
  await page.locator('.monaco-workbench.vs:not(.vs-dark)').waitFor({ timeout: 60_000 });
  await page.waitForTimeout(1000);
  await s.shot('17-dashboard-light');
  // One webview at a time: the browser's frame is then the only one.
  await runCommand(page, 'View: Close All Editors');
  await runCommand(page, 'RFT Studio: Open Experience Browser');
  await browserFrame().locator('.vlist-row[data-id]').first().waitFor({ timeout: 60_000 });
  await s.shot('18-experience-browser-light');
});

test('export of an 8,832-experience buffer (timing for docs/extension.md)', async () => {
  const { page } = s;
  // As many experiences as the measurement exported, in a run of their own.
  await reg.create({ id: 'big', name: 'big buffer', config: { name: 'big buffer' } });
  await reg.setStatus('big', 'completed');
  await makeBuffer(8832, join(ws, '.rft', 'runs', 'big'));
  await runCommand(page, 'RFT Studio: Refresh');
  await page.locator('.monaco-list-row', { hasText: 'big buffer' }).first().waitFor({ timeout: 60_000 });
  await runCommand(page, 'RFT Studio: Open Buffer');
  await page
    .locator('.quick-input-list .monaco-list-row', { hasText: 'big buffer' })
    .first()
    .click({ timeout: 30_000 });
  await until(
    async () => (await sidebarCount(page, 'Usual experiences')) === 8832,
    'the big buffer in the sidebar',
    60_000,
  );
  await runCommand(page, 'RFT Studio: Export Buffer as JSONL');
  // code-server's save dialog: a path box prefilled with <workspace>/buffer.jsonl.
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 30_000 });
  await until(async () => /buffer\.jsonl$/.test(await input.inputValue()), 'the export dialog', 30_000);
  const t0 = Date.now();
  await page.keyboard.press('Enter');
  await page
    .locator('.notifications-toasts .notification-toast', { hasText: 'Exported 8832 experiences' })
    .first()
    .waitFor({ timeout: 120_000 });
  timing('export 8,832 experiences: save -> "Exported" notification', t0);
  assert.equal(readFileSync(join(ws, 'buffer.jsonl'), 'utf8').trim().split('\n').length, 8832);
});
