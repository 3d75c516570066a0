// End to end in a real VS Code (code-server + chromium), issue 28 items 4-5: a user's own math file
// outside tasksets/ (`{id, problem, final}`, 3 broken records) and worked solutions (`{problem,
// worked}`), no config. The Tasksets view lists both; the file is validated with the detected
// mapping (3 errors, not one per record); Map Fields shows the proposal over the first records and
// writes it into a new config that reads the file. Issue 40 item 1: a column of the user's own named
// like a schema field (`difficulty: "easy"`) is kept in metadata with one warning and a rename quick
// fix (not 40 errors), and Start Training refuses a config whose taskset has errors. Item 9: the
// file the config names renamed away and back: the config's problem comes and goes unopened.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import {
  E2E_SETTINGS,
  openFile,
  runCommand,
  startSession,
  timing,
  until,
  type Session,
  showProblems,
  test,
} from './code-server.js';

let s: Session;
let ws: string;
const rec = (i: number) => JSON.stringify({ id: `m-${i}`, problem: `What is ${i} + ${i}?`, final: String(2 * i) });
const MATH = [
  rec(1),
  rec(2),
  '{"id": "m-3", "problem": ',
  JSON.stringify({ id: 'm-4', problem: '', final: '8' }),
  rec(5),
  JSON.stringify({ id: 'm-6', problem: 'What is 6 + 6?' }),
  rec(7),
  rec(8),
];
const LEVELS = Array.from({ length: 40 }, (_, i) =>
  JSON.stringify({
    key: `q${i}`,
    input: `What is ${i} plus ${i}?`,
    label: String(2 * i),
    difficulty: ['easy', 'hard'][i % 2],
  }),
);
const WORKED = [
  JSON.stringify({ problem: 'What is 1 + 1?', worked: 'One and one make two, so the answer is 2.' }),
  JSON.stringify({ problem: 'What is 2 + 3?', worked: 'Count up three from two: the answer is 5.' }),
];

before(async () => {
  ws = mkdtempSync(join(tmpdir(), 'rft-e2e-map-'));
  mkdirSync(join(ws, 'mine'));
  writeFileSync(join(ws, 'mine', 'math.jsonl'), MATH.join('\n') + '\n');
  writeFileSync(join(ws, 'worked.jsonl'), WORKED.join('\n') + '\n');
  writeFileSync(join(ws, 'mine', 'levels.jsonl'), LEVELS.join('\n') + '\n');
  s = await startSession(ws, E2E_SETTINGS);
});

after(async () => {
  await s?.close();
});

test(
  'own files outside tasksets/: listed, 3 real problems before any config, Map Fields writes the mapping',
  { timeout: 600_000 },
  async () => {
    const { page } = s;
    await page.locator('.activitybar [aria-label^="RFT Studio"]').first().click({ timeout: 60_000 });
    let t0 = Date.now();
    // Listed by their records, with the errors read against the detected mapping.
    const row = page.locator('.monaco-list-row', { hasText: 'math.jsonl' }).first();
    await until(
      async () => /5 tasks · 3 errors/.test(await row.innerText()),
      'math.jsonl: 5 tasks · 3 errors',
      180_000,
    );
    timing('activation -> own taskset listed with 3 errors', t0);
    await page.locator('.monaco-list-row', { hasText: 'worked.jsonl' }).first().waitFor({ timeout: 30_000 });

    await openFile(page, 'math.jsonl');
    await showProblems(page);
    const problems = page.locator('.markers-panel .monaco-list-row');
    const NOTE = 'Read as tasks with problem -> prompt, final -> answer, id (detected from the first records';
    await until(
      async () => (await page.locator('.markers-panel').innerText()).includes(NOTE),
      'the note in Problems',
      60_000,
    );
    const text = await page.locator('.markers-panel').innerText();
    assert.match(text, /field 'problem'/);
    assert.match(text, /field 'final'/);
    assert.ok(!/field 'answer': required field is missing/.test(text), 'no error per record for the unmapped answer');
    assert.ok((await problems.count()) >= 4);
    await page.waitForTimeout(500);
    await s.shot('40-own-file-problems-detected-mapping');

    // Map Fields on the open file: the proposal over the first records.
    t0 = Date.now();
    await runCommand(page, 'RFT Studio: Map Fields');
    const use = page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'Use: problem -> prompt, final -> answer, id' })
      .first();
    await use.waitFor({ timeout: 60_000 });
    timing('Map Fields -> proposal shown', t0);
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: '"problem":"What is 1 + 1?"' })
      .first()
      .waitFor({ timeout: 10_000 });
    await s.shot('41-map-fields-proposal');
    t0 = Date.now();
    await use.click();
    await until(() => existsSync(join(ws, 'train.rft.yaml')), 'train.rft.yaml written', 60_000);
    await page
      .locator('.notifications-toasts .notification-toast', { hasText: 'read with problem -> prompt, final -> answer' })
      .first()
      .waitFor({ timeout: 60_000 });
    timing('Map Fields accepted -> config written and told', t0);
    const cfg = parse(readFileSync(join(ws, 'train.rft.yaml'), 'utf8'));
    assert.deepEqual(cfg.taskset.format, { prompt_key: 'problem', response_key: 'final' });
    assert.equal(cfg.taskset.path, 'mine/math.jsonl');
    // Read as the config maps it now: still the 3 errors, the "detected" note gone.
    // (worked.jsonl, not mapped, keeps its own note.)
    await until(
      async () => !(await page.locator('.markers-panel').innerText()).includes(NOTE),
      'the note gone',
      60_000,
    );
    await until(async () => /5 tasks · 3 errors/.test(await row.innerText()), 'still 3 errors', 30_000);
    await page.waitForTimeout(500);
    await s.shot('42-map-fields-written');

    // Issue 40 item 1: the user's own `difficulty` column does not break the file: 40 tasks, one warning.
    const levels = page.locator('.monaco-list-row', { hasText: 'levels.jsonl' }).first();
    await until(async () => /40 tasks/.test(await levels.innerText()), 'levels.jsonl: 40 tasks', 60_000);
    assert.ok(!/error/.test(await levels.innerText()), await levels.innerText());
    await openFile(page, 'levels.jsonl');
    const OWN = `field 'difficulty': holds "easy", not the task difficulty`;
    await until(async () => (await page.locator('.markers-panel').innerText()).includes(OWN), 'the warning', 60_000);
    await s.shot('43-own-column-warning');
    // Its quick fix (the preferred one at line 1) renames the column in every record.
    await page.locator('.monaco-editor .view-lines').first().click();
    await page.keyboard.press('Control+Home');
    await runCommand(page, 'Auto Fix...');
    await page.keyboard.press('Control+S');
    await until(
      () => readFileSync(join(ws, 'mine', 'levels.jsonl'), 'utf8').split('"level":').length === 41,
      'the column renamed in the 40 records',
      60_000,
    );
    await until(
      async () => !(await page.locator('.markers-panel').innerText()).includes(OWN),
      'the warning gone',
      60_000,
    );
    assert.match(await levels.innerText(), /40 tasks/);

    // Start Training on the config whose taskset has 3 errors: refused, with the count; no run.
    await runCommand(page, 'RFT Studio: Start Training');
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'train.rft.yaml' })
      .first()
      .click({ timeout: 30_000 });
    await page
      .locator('.notifications-toasts .notification-toast', {
        hasText: 'train.rft.yaml: 3 errors in its data files (taskset mine/math.jsonl: 3)',
      })
      .first()
      .waitFor({ timeout: 60_000 });
    await s.shot('44-start-refused-taskset-errors');
    const reg = join(ws, '.rft', 'runs.json');
    assert.ok(!existsSync(reg) || JSON.parse(readFileSync(reg, 'utf8')).runs.length === 0, 'no run was started');

    // Issue 40 item 9: the file the config names is renamed outside the editor: the config's problem
    // shows without opening it, and goes when the file is back (not when Start checks again).
    renameSync(join(ws, 'mine', 'math.jsonl'), join(ws, 'mine', 'math-old.jsonl'));
    const GONE = "taskset.path: no file 'mine/math.jsonl'";
    await until(
      async () => (await page.locator('.markers-panel').innerText()).includes(GONE),
      'the config problem',
      60_000,
    );
    await s.shot('45-config-names-a-moved-file');
    renameSync(join(ws, 'mine', 'math-old.jsonl'), join(ws, 'mine', 'math.jsonl'));
    await until(
      async () => !(await page.locator('.markers-panel').innerText()).includes(GONE),
      'the problem gone',
      60_000,
    );
  },
);
