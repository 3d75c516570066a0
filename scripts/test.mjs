// Runs the unit and integration tests with node's own test runner (TypeScript through tsx).
// Usage: node scripts/test.mjs [files or folders...]; default: every *.test.ts under test/ except test/e2e and test/scaleout.
import { spawnSync } from 'node:child_process';
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
const files = [];
if (args.length === 0) collect('test', files, true);
else for (const a of args) collect(a, files, false);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const concurrency = process.env.RFT_TEST_CONCURRENCY ?? '2';
// test-exit.mjs: a test file whose tests have all ended exits even if something it started (a timer, a
// socket) is still open, instead of holding the whole suite until CI's time limit, and without
// --test-force-exit's lost results (see there).
const exitAfter = new URL('./test-exit.mjs', import.meta.url).href;
const r = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--import', exitAfter, '--test', `--test-concurrency=${concurrency}`, ...files],
  {
    stdio: 'inherit',
    env: { ...process.env, RFT_LOG_LEVEL: process.env.RFT_LOG_LEVEL ?? 'warn' },
  },
);
process.exit(r.status ?? 1);
