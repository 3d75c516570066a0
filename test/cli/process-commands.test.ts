// The internal commands a run's coordinator starts for the checkpoint placement are `rft explorer-process`
// and `rft trainer-process`; their names before 2026-11-27 (`explorer-worker`, `trainer-worker`) still
// run the same command, with a warning that names the new one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFor } from '../../backend/cli/command.js';
import { commands } from '../../backend/cli/commands/index.js';
import { processArgv } from '../../backend/coordinator/process-context.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const rft = (...args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'backend/cli.ts'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });

for (const k of ['explorer', 'trainer']) {
  test(`rft ${k}-process without its arguments prints its usage; ${k}-worker is the same command and warns`, () => {
    const now = rft(`${k}-process`);
    assert.equal(now.status, 2);
    assert.match(now.stderr, new RegExp(`usage: rft ${k}-process RUN_DIR --run-id ID --store URL \\[--stage N\\]`));
    assert.doesNotMatch(now.stderr, /warning/);
    const old = rft(`${k}-worker`);
    assert.equal(old.status, 2);
    assert.match(old.stderr, new RegExp(`warning: 'rft ${k}-worker' is now 'rft ${k}-process'`));
    assert.match(old.stderr, new RegExp(`usage: rft ${k}-process RUN_DIR`));
  });
}

test('the command line a run starts its processes with is the one their declarations parse', () => {
  for (const k of ['explorer-process', 'trainer-process'] as const) {
    const [name, ...rest] = processArgv(k, {
      runDir: '/r/run-1',
      runId: 'run-1',
      store: '/r/run-1/buffer.db',
      stage: 2,
    });
    const p = parseFor(commands.get(name!), rest);
    assert.deepEqual(p.positional, ['/r/run-1']);
    assert.deepEqual(p.flags, { 'run-id': 'run-1', store: '/r/run-1/buffer.db', stage: 2 });
  }
});
