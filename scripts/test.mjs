// Runs the unit and integration tests with node's own test runner (TypeScript through tsx).
// Usage: node scripts/test.mjs [--retry-failed-files] [files or folders...]; default: every *.test.ts
// under test/ except test/e2e and test/scaleout.
//
// --retry-failed-files (the e2e suite): one process per file, and a file that fails is run once more.
// A real VS Code driven through a browser on a shared machine now and then loses a keystroke or a
// toast; a file that fails twice fails the suite. Each first failure is printed with its reason, and
// the suite ends with one summary over the files' final runs.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const SKIP = new Set(['e2e', 'scaleout', 'fixtures']);
function collect(path, out, top) {
  const st = statSync(path);
  if (st.isFile()) {
    if (path.endsWith('.test.ts')) out.push(path);
    return;
  }
  for (const name of readdirSync(path).sort()) {
    if (top && SKIP.has(name)) continue;
    collect(join(path, name), out, false);
  }
}
const args = process.argv.slice(2);
const retry = args.includes('--retry-failed-files');
const paths = args.filter((a) => a !== '--retry-failed-files');
const files = [];
if (paths.length === 0) collect('test', files, true);
else for (const a of paths) collect(a, files, false);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const concurrency = process.env.RFT_TEST_CONCURRENCY ?? '2';
// test-exit.mjs: a test file whose tests have all ended exits even if something it started (a timer, a
// socket) is still open, instead of holding the whole suite until CI's time limit, and without
// --test-force-exit's lost results (see there).
const exitAfter = new URL('./test-exit.mjs', import.meta.url).href;
// A file that hangs (a promise nothing resolves while a socket keeps the process alive) fails by name
// after this long instead of holding the whole suite until CI's time limit; node 20 applies
// --test-timeout to each file's run. 30 min: far above the slowest file (a few minutes).
const fileTimeoutMs = process.env.RFT_TEST_FILE_TIMEOUT_MS ?? String(30 * 60 * 1000);
const nodeArgs = (list) => [
  '--import',
  'tsx',
  '--import',
  exitAfter,
  '--test',
  `--test-concurrency=${concurrency}`,
  `--test-timeout=${fileTimeoutMs}`,
  ...list,
];
const env = { ...process.env, RFT_LOG_LEVEL: process.env.RFT_LOG_LEVEL ?? 'warn' };

if (!retry) {
  const r = spawnSync(process.execPath, nodeArgs(files), { stdio: 'inherit', env });
  process.exit(r.status ?? 1);
}

/** Runs one file, its output passed through as it comes; returns its exit code and TAP counts. */
function runFile(file) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, nodeArgs([file]), { stdio: ['ignore', 'pipe', 'inherit'], env });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      out += d;
      process.stdout.write(d);
    });
    child.on('close', (code) => {
      // The file's own summary: its last `# pass N` line and so on.
      const count = (k) => Number([...out.matchAll(new RegExp(`^# ${k} (\\d+)$`, 'gm'))].pop()?.[1] ?? 0);
      const failed = [...out.matchAll(/^not ok \d+ - (.*)$/gm)].map((m) => m[1]);
      resolve({ code: code ?? 1, tests: count('tests'), pass: count('pass'), fail: count('fail'), failed });
    });
  });
}

const total = { tests: 0, pass: 0, fail: 0 };
const retried = [];
let rc = 0;
for (const file of files) {
  let r = await runFile(file);
  if (r.code !== 0) {
    retried.push(`${file} (${r.failed.join('; ') || `exit ${r.code}`})`);
    console.log(`# test.mjs: ${file} failed (${r.failed.join('; ') || `exit ${r.code}`}); running it once more`);
    r = await runFile(file);
  }
  if (r.code !== 0) rc = 1;
  total.tests += r.tests;
  total.pass += r.pass;
  total.fail += r.fail + (r.code !== 0 && r.fail === 0 ? 1 : 0);
}
if (retried.length)
  console.log(`# test.mjs: ${retried.length} file(s) failed once and were run again: ${retried.join(', ')}`);
console.log(`# tests ${total.tests}\n# pass ${total.pass}\n# fail ${total.fail}`);
process.exit(rc);
