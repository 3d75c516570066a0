// End to end in a real VS Code (code-server + chromium): the hour of issue 28 replayed in one
// workspace with the user's own field names and an imported model. `mine/math.jsonl` holds 60
// `{id, problem, final}` lines of which 3 are broken, `mine/math-eval.jsonl` the eval file in the same
// names, `worked.jsonl` `{problem, worked}` solutions; a Qwen2-layout model with the real Qwen
// tokenizer sits in the Hugging Face cache. Map Fields -> the Tasksets view and Problems show only the
// 3 broken records -> Import Model… -> Start Training (LoRA), refused with the 3 errors, Start Anyway -> the dashboard shows steps and lists
// checkpoints as they are saved -> Add Selection as Expert Example on a buffer task -> Evaluate a
// checkpoint from the dashboard. Each command -> visible result is timed (printed and written to
// test-artifacts/e2e/user-hour-timings.json, never asserted); screenshots 60-65 are for docs/extension.md.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { makeHubEntry, TINY_QWEN2 } from '../../tools/hf-model.js';
import {
  ARTIFACTS,
  E2E_SETTINGS,
  openFile,
  runCommand,
  sidebarCount,
  startSession,
  until,
  type Session,
  stopLeftRuns,
  showProblems,
  test,
} from './code-server.js';

let s: Session;
let ws: string;
const REV = '3456789abcdef0123456789abcdef0123456789a';
type RunRow = { id: string; status: string; dbPath: string; dir: string; configPath: string | null };
const runs = (): RunRow[] =>
  existsSync(join(ws, '.rft', 'runs.json'))
    ? (JSON.parse(readFileSync(join(ws, '.rft', 'runs.json'), 'utf8')) as { runs: RunRow[] }).runs
    : [];

const rec = (i: number) =>
  JSON.stringify({ id: `m-${i}`, problem: `What is ${i} + ${i + 2}?`, final: String(2 * i + 2) });
// 60 lines, 3 broken: a cut line, an empty problem, a missing answer.
const MATH = Array.from({ length: 60 }, (_, k) => {
  const i = k + 1;
  if (i === 14) return '{"id": "m-14", "problem": ';
  if (i === 31) return JSON.stringify({ id: 'm-31', problem: '', final: '64' });
  if (i === 47) return JSON.stringify({ id: 'm-47', problem: 'What is 47 + 49?' });
  return rec(i);
});
const EVAL = [61, 62, 63, 64, 65, 66].map(rec);
const WORKED = [
  JSON.stringify({ problem: 'What is 1 + 3?', worked: 'One and three: count up three from one, which gives 4.' }),
  JSON.stringify({ problem: 'What is 2 + 4?', worked: 'Two and four make six, so the answer is 6.' }),
];

const timings: { figure: string; ms: number }[] = [];
/** Command -> visible result: printed (as the other e2e files print theirs) and kept for the JSON file. */
function timed(figure: string, t0: number): void {
  const ms = Date.now() - t0;
  console.log(JSON.stringify({ e2e: 'timing', figure, ms }));
  timings.push({ figure, ms });
}

before(async () => {
  const cache = mkdtempSync(join(tmpdir(), 'rft-e2e-hub-hour-'));
  makeHubEntry(cache, 'acme/qwen2-mine', REV, { ...TINY_QWEN2, intermediate: 64 });
  // code-server passes its environment to the extension host, and the extension to `rft serve`.
  process.env.HF_HUB_CACHE = cache;
  ws = mkdtempSync(join(tmpdir(), 'rft-e2e-hour-'));
  mkdirSync(join(ws, 'mine'));
  writeFileSync(join(ws, 'mine', 'math.jsonl'), MATH.join('\n') + '\n');
  writeFileSync(join(ws, 'mine', 'math-eval.jsonl'), EVAL.join('\n') + '\n');
  writeFileSync(join(ws, 'worked.jsonl'), WORKED.join('\n') + '\n');
  // What the user selects as an expert answer.
  writeFileSync(join(ws, 'notes.md'), 'Three and five: count up five from three, which gives 8. The answer is 8.\n');
  s = await startSession(ws, E2E_SETTINGS);
});

after(async () => {
  if (ws) stopLeftRuns(ws);
  mkdirSync(ARTIFACTS, { recursive: true });
  writeFileSync(join(ARTIFACTS, 'user-hour-timings.json'), JSON.stringify(timings, null, 2) + '\n');
  console.log(`user-hour timings (${join(ARTIFACTS, 'user-hour-timings.json')}):`);
  for (const t of timings) console.log(`  ${(t.ms / 1000).toFixed(1).padStart(6)} s  ${t.figure}`);
  await s?.close();
});

test(
  "the issue's hour: own field names, Map Fields, 3 problems, imported model, train, dashboard steps, expert added, evaluate",
  { timeout: 900_000 },
  async () => {
    const { page } = s;
    let t0 = Date.now();
    await page.locator('.activitybar [aria-label^="RFT Studio"]').first().click({ timeout: 60_000 });
    // Listed by its records and read with the detected mapping: 57 tasks, the 3 broken ones only.
    const row = page.locator('.monaco-list-row', { hasText: 'math.jsonl' }).filter({ hasNotText: 'eval' }).first();
    await until(
      async () => /57 tasks · 3 errors/.test(await row.innerText()),
      'math.jsonl: 57 tasks · 3 errors',
      180_000,
    );
    timed('workbench open -> own taskset listed: 57 tasks · 3 errors', t0);

    // Map Fields on the file: the proposal over its first records, accepted -> a config.
    await openFile(page, 'math.jsonl');
    t0 = Date.now();
    await runCommand(page, 'RFT Studio: Map Fields');
    const use = page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'Use: problem -> prompt, final -> answer, id' })
      .first();
    await use.waitFor({ timeout: 60_000 });
    timed('Map Fields -> the proposal over the first records', t0);
    await s.shot('60-user-hour-map-fields');
    t0 = Date.now();
    await use.click();
    await page
      .locator('.notifications-toasts .notification-toast', { hasText: 'read with problem -> prompt, final -> answer' })
      .first()
      .waitFor({ timeout: 60_000 });
    timed('Map Fields accepted -> config written and told', t0);
    const mapped = parse(readFileSync(join(ws, 'train.rft.yaml'), 'utf8'));
    assert.deepEqual(mapped.taskset.format, { prompt_key: 'problem', response_key: 'final' });

    // Problems on the file: the 3 broken records, each at its line, nothing per record for the mapped names.
    await showProblems(page);
    const panel = page.locator('.markers-panel');
    await until(async () => /field 'final'/.test(await panel.innerText()), 'the problems of math.jsonl', 60_000);
    const problems = await panel.innerText();
    assert.ok(!/field 'answer': required field is missing/.test(problems), problems);
    assert.ok(!/field 'prompt': required field is missing/.test(problems), problems);
    assert.match(problems, /\[Ln 14/);
    assert.match(problems, /\[Ln 31/);
    assert.match(problems, /\[Ln 47/);
    await until(async () => /57 tasks · 3 errors/.test(await row.innerText()), 'still 3 errors once mapped', 30_000);
    await page.waitForTimeout(500);
    await s.shot('61-user-hour-three-problems');
    await runCommand(page, 'View: Toggle Problems');

    // Import the model from the Hugging Face cache, then Start Training on its toast with LoRA.
    t0 = Date.now();
    await runCommand(page, 'RFT Studio: Import Model…');
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'acme/qwen2-mine' })
      .first()
      .click({ timeout: 60_000 });
    const imported = page
      .locator('.notifications-toasts .notification-toast', { hasText: 'Imported acme/qwen2-mine' })
      .first();
    await imported.waitFor({ timeout: 120_000 });
    timed('Import Model: palette -> pick -> "Imported" toast', t0);
    await imported.locator('.monaco-button', { hasText: 'Start Training' }).first().click();
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'LoRA (rank' })
      .first()
      .click({ timeout: 30_000 });
    // The 3 broken records stop the start (issue 40 item 1): the count, and the user starts anyway.
    const refused = page
      .locator('.notifications-toasts .notification-toast', {
        hasText: '3 errors in its data files (taskset mine/math.jsonl: 3)',
      })
      .first();
    await refused.waitFor({ timeout: 60_000 });
    assert.ok(!existsSync(join(ws, '.rft', 'runs.json')) || runs().length === 0, 'not started before the answer');
    await refused.locator('.monaco-button', { hasText: 'Start Anyway (skip 3)' }).first().click();
    t0 = Date.now();
    const run = await until(
      () => runs().find((r) => r.status === 'running' || r.status === 'completed'),
      'the run to start',
      180_000,
    );
    timed('LoRA picked -> run started', t0);
    const cfgName = readdirSync(ws).find((f) => f.startsWith('train-') && f.endsWith('.rft.yaml'));
    assert.ok(cfgName, `the model's config: ${readdirSync(ws).join(', ')}`);
    const cfg = parse(readFileSync(join(ws, cfgName), 'utf8'));
    // The template reads the user's files with their own names: taskset, eval file and experts.
    assert.equal(cfg.taskset.path, 'mine/math.jsonl');
    assert.deepEqual(cfg.taskset.format, { prompt_key: 'problem', response_key: 'final' });
    assert.equal(cfg.eval.path, 'mine/math-eval.jsonl');
    assert.equal(cfg.experts.path, 'worked.jsonl');
    assert.equal(cfg.experts.format.response_key, 'worked');

    // The dashboard (Start Training opens it) shows the run's steps, and lists checkpoints as they are saved.
    const d = page.frameLocator('iframe.webview.ready >> nth=-1').frameLocator('iframe#active-frame');
    await d.locator('.status', { hasText: /step [1-9]/ }).waitFor({ timeout: 420_000 });
    timed('run started -> the dashboard shows step 1', t0);
    const ck = d.locator('.checkpoint:not([data-version="0"])').first();
    await ck.waitFor({ timeout: 300_000 });
    timed('run started -> a checkpoint after v0 listed on the dashboard while the run goes on', t0);
    assert.equal(runs().find((r) => r.id === run.id)?.status, 'running');
    await page.waitForTimeout(500);
    await s.shot('62-user-hour-dashboard-steps');

    // A selection added as an expert example of a task of the buffer (picked from the list).
    await openFile(page, 'notes.md');
    await page.locator('.monaco-editor .view-lines').first().click();
    await page.keyboard.press('Control+A');
    const experts = await sidebarCount(page, 'Expert experiences');
    t0 = Date.now();
    await runCommand(page, 'RFT Studio: Add Selection as Expert Example');
    const task = page.locator('.quick-input-list .monaco-list-row', { hasText: /^m-\d+/ }).first();
    await task.waitFor({ timeout: 60_000 });
    timed('Add Selection as Expert Example -> the task pick list', t0);
    const taskId = /^m-\d+/.exec((await task.innerText()).trim())![0];
    t0 = Date.now();
    await task.click();
    await page
      .locator('.notifications-toasts .notification-toast', { hasText: `for task ${taskId}` })
      .first()
      .waitFor({ timeout: 60_000 });
    timed('task picked -> "Added expert example" toast', t0);
    await until(
      async () => (await sidebarCount(page, 'Expert experiences')) === experts + 1,
      'the sidebar expert count to go up',
      60_000,
    );
    timed('task picked -> the sidebar expert count up', t0);
    await s.shot('63-user-hour-expert-added');

    // Evaluate from the dashboard on a checkpoint: the run's held-out split (the user's eval file, mapped).
    await runCommand(page, 'RFT Studio: Open Training Dashboard');
    const dash = page.frameLocator('iframe.webview.ready >> nth=-1').frameLocator('iframe#active-frame');
    const first = dash.locator('.checkpoint:not([data-version="0"])').first();
    await first.waitFor({ timeout: 60_000 });
    const version = await first.getAttribute('data-version');
    t0 = Date.now();
    await first.locator('vscode-button').click();
    const result = dash.locator(`.checkpoint[data-version="${version}"] .eval-result`, { hasText: /accuracy/ });
    await result.waitFor({ timeout: 300_000 }).catch(async (e) => {
      await s.shot('64-user-hour-evaluated-FAILED');
      throw e;
    });
    timed('dashboard Evaluate -> accuracy next to the checkpoint', t0);
    assert.match(await result.innerText(), new RegExp(`v${version}: accuracy [\\d.]+% on 6 tasks`));
    await s.shot('64-user-hour-evaluated');
  },
);
