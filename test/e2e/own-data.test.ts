// End to end in a real VS Code (code-server + chromium), the own-data flow from an empty workspace
// (issue 13 item 6): the user writes a taskset, a held-out eval file and expert demonstrations with
// foreign field names (uid / question / solution, question / completion) -> Start Training ->
// "Create a config from the template…" writes train.rft.yaml with the `format` mappings, the eval
// file and the experts (MIX) and opens it for review -> the user raises the steps and starts it from
// the palette -> experiences of those tasks in the browser -> a task line typed into the taskset
// and saved while training is sampled -> an edited response promoted is trained on (its use count)
// -> the held-out accuracy on the user's eval file in the dashboard.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import {
  E2E_SETTINGS,
  openFile,
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
const runs = () =>
  (
    JSON.parse(readFileSync(join(ws, '.rft', 'runs.json'), 'utf8')) as {
      runs: { id: string; status: string; dbPath: string; dir: string }[];
    }
  ).runs;

// GSM8K-style records under other names: the answer is what follows `####`.
const task = (uid: string, a: number, b: number) =>
  JSON.stringify({ uid, question: `${a}+${b}=`, solution: `${a} plus ${b} #### ${a + b}` });
const TRAIN = [
  task('w1', 1, 2),
  task('w2', 3, 4),
  task('w3', 2, 2),
  task('w4', 5, 1),
  task('w5', 6, 2),
  task('w6', 4, 4),
];
const EVAL = [task('e1', 2, 3), task('e2', 1, 1), task('e3', 3, 3), task('e4', 4, 2)];
const EXPERTS = [
  JSON.stringify({ question: '1+2=', completion: '3' }),
  JSON.stringify({ question: '3+4=', completion: '7' }),
];
const NEW_TASK = task('w-new', 7, 1);

before(async () => {
  // An empty folder: everything in it is written while the workbench is open, as a user would.
  ws = mkdtempSync(join(tmpdir(), 'rft-e2e-own-'));
  s = await startSession(ws, E2E_SETTINGS);
});

after(async () => {
  if (ws) stopLeftRuns(ws);
  await s?.close();
});

test(
  'own data from an empty workspace: template config with format mapping -> train -> browse -> live task -> promote edited -> held-out accuracy',
  { timeout: 900_000 },
  async () => {
    const { page } = s;
    await page.locator('.activitybar [aria-label^="RFT Studio"]').first().click({ timeout: 60_000 });
    await page.locator('.monaco-list-row', { hasText: 'No buffer open' }).first().waitFor({ timeout: 90_000 });

    // Where a new user starts: the walkthrough (taskset -> validate -> train -> curate).
    await runCommand(page, 'Welcome: Open Walkthrough...');
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'Your first RFT run' })
      .first()
      .click({ timeout: 30_000 });
    await page
      .locator('.gettingStartedContainer', { hasText: 'Create a taskset' })
      .first()
      .waitFor({ timeout: 60_000 });
    await page.locator('.gettingStartedContainer', { hasText: 'Start training' }).first().waitFor({ timeout: 10_000 });
    await page.waitForTimeout(500);
    await s.shot('29-walkthrough');
    await runCommand(page, 'View: Close All Editors');

    mkdirSync(join(ws, 'tasksets'));
    writeFileSync(join(ws, 'tasksets', 'math-words.jsonl'), TRAIN.join('\n') + '\n');
    writeFileSync(join(ws, 'tasksets', 'math-eval.jsonl'), EVAL.join('\n') + '\n');
    writeFileSync(join(ws, 'experts.jsonl'), EXPERTS.join('\n') + '\n');
    await page.locator('.monaco-list-row', { hasText: 'math-words.jsonl' }).first().waitFor({ timeout: 60_000 });

    // The config from the template: the model pick (when offered), then the config opens for review.
    await runCommand(page, 'RFT Studio: Start Training');
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'Create a config from the template' })
      .first()
      .click({ timeout: 30_000 });
    const preset = page.locator('.quick-input-list .monaco-list-row', { hasText: 'tiny-0.4m' }).first();
    const tab = page.locator('.tabs-container .tab', { hasText: 'train.rft.yaml' }).first();
    await Promise.race([preset.waitFor({ timeout: 30_000 }), tab.waitFor({ timeout: 30_000 })]);
    if (await preset.isVisible()) await preset.click();
    await tab.waitFor({ timeout: 30_000 });
    await page
      .locator('.notifications-toasts .notification-toast', { hasText: 'from the template' })
      .first()
      .waitFor({ timeout: 30_000 });
    const config = readFileSync(join(ws, 'train.rft.yaml'), 'utf8');
    assert.match(
      config,
      /path: "tasksets\/math-words\.jsonl"\n {2}domain: math\n {2}selector: shuffle\n {2}format: \{ prompt_key: "question", response_key: "solution", id_key: "uid" \}/,
    );
    assert.match(
      config,
      /eval:\n {2}path: "tasksets\/math-eval\.jsonl"\n {2}domain: math\n {2}format: \{ prompt_key: "question", response_key: "solution", id_key: "uid" \}/,
    );
    assert.match(
      config,
      /experts:\n {2}path: "experts\.jsonl"\n {2}format: \{ prompt_key: "question", response_key: "completion" \}/,
    );
    assert.match(config, /name: mix/);
    assert.ok(!existsSync(join(ws, '.rft', 'runs.json')) || runs().length === 0, 'no run was started unseen');
    await page.waitForTimeout(500);
    await s.shot('30-own-config-from-template');

    // The user gives it more steps (saved from outside the editor, which reloads it), then starts it.
    writeFileSync(join(ws, 'train.rft.yaml'), config.replace(/steps: 50\b/, 'steps: 3000'));
    await runCommand(page, 'RFT Studio: Start Training');
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'train.rft.yaml' })
      .first()
      .click({ timeout: 30_000 });
    const run = await until(() => runs().find((r) => r.status === 'running'), 'the run to start', 180_000);
    // Start Training opens the dashboard: let it take the focus before the next command.
    await page.locator('.tabs-container .tab', { hasText: 'RFT Dashboard' }).first().waitFor({ timeout: 60_000 });
    await page.waitForTimeout(1000);

    // Experiences of the user's tasks (ids from its uid field) in the browser.
    await runCommand(page, 'RFT Studio: Open Experience Browser');
    const browser = () => page.frameLocator('iframe.webview.ready >> nth=-1').frameLocator('iframe#active-frame');
    const f = browser();
    // (The experts file's demonstrations are listed too, source "human".)
    await f
      .locator('.vlist-row[data-id] .task', { hasText: /^w[1-6]$/ })
      .first()
      .waitFor({ timeout: 180_000 })
      .catch(async (e) => {
        await s.shot('31-own-experiences-in-browser-FAILED');
        throw new Error(
          `${String(e)}\nbrowser: ${await f
            .locator('.count')
            .innerText()
            .catch(() => '?')} / ${await f
            .locator('.counts')
            .innerText()
            .catch(
              () => '?',
            )}; rows: ${(await f.locator('.vlist-row[data-id]').allInnerTexts()).slice(0, 4).join(' | ')}`,
        );
      });
    await s.shot('31-own-experiences-in-browser');

    // A task line typed into the taskset and saved while the run trains: it is sampled.
    await openFile(page, 'math-words.jsonl');
    await page.locator('.monaco-editor .view-lines').first().click();
    await page.keyboard.press('Control+End');
    await page.keyboard.insertText(NEW_TASK + '\n');
    await page.keyboard.press('Control+S');
    await until(
      () => readFileSync(join(ws, 'tasksets', 'math-words.jsonl'), 'utf8').includes('w-new'),
      'the taskset saved',
    );
    const t0 = Date.now();
    const store = new SqliteStore(run.dbPath);
    try {
      await until(
        async () => (await store.list({ taskId: 'w-new', limit: 1 })).length > 0,
        'the new task to be sampled',
        300_000,
      );
      timing('task line saved -> its first experience in the buffer', t0);
      // ... and the browser shows its experiences under that task id.
      await runCommand(page, 'RFT Studio: Open Experience Browser');
      await browser().locator('#f-taskId input').fill('w-new');
      await browser()
        .locator('.vlist-row[data-id] .task', { hasText: /^w-new$/ })
        .first()
        .waitFor({ timeout: 60_000 });
      await s.shot('32-own-live-task-sampled');

      // An edited (correct) response promoted: the trainer trains on it (its use count goes up).
      await browser()
        .locator('.vlist-row[data-id]:not([data-id*="~expert~"])', {
          has: browser().locator('.task', { hasText: /^w-new$/ }),
        })
        .first()
        .click();
      await browser().locator('.detail h2').waitFor();
      const id = (await browser().locator('.detail h2').innerText()).trim();
      await browser().locator('#edit-promote').click();
      await browser().locator('#edit-text textarea').fill('8');
      await browser().locator('#edit-confirm').click();
      await browser()
        .locator('.message', { hasText: `Promoted an edited response of ${id}` })
        .waitFor({ timeout: 30_000 });
      const trained = await until(
        async () =>
          (await store.list({ source: 'expert', taskId: 'w-new', limit: 10 })).find(
            (e) => e.responseText === '8' && e.useCount > 0,
          ),
        'the promoted expert to be trained on',
        300_000,
      );
      assert.ok(trained.useCount > 0);
      await s.shot('33-own-promoted-edited');
    } finally {
      await store.close();
    }

    // The held-out accuracy on the user's eval file (monitor.eval_every: 10 in the template).
    await runCommand(page, 'RFT Studio: Open Training Dashboard');
    const d = page.frameLocator('iframe.webview.ready >> nth=-1').frameLocator('iframe#active-frame');
    await d
      .locator('figure[data-title="Eval accuracy"] .legend', { hasText: /held-out accuracy\s*\d/ })
      .waitFor({ timeout: 300_000 });
    await d.locator('pre.config', { hasText: 'math-eval.jsonl' }).waitFor({ timeout: 60_000 });
    const evals = readFileSync(join(run.dir, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"kind":"eval"'));
    assert.ok(evals.length > 0, 'an eval record in metrics.jsonl');
    await s.shot('34-own-heldout-accuracy-dashboard');
  },
);
