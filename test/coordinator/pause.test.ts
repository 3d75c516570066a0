// `rft pause RUN` in the middle of a run (separate explorer and trainer processes): the run ends
// after its current step with status `paused`, and `rft resume RUN` completes it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { cliCommand } from '../../backend/coordinator/processes.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { tinyConfig, tempWorkspace, writeConfig } from './tiny-config.js';

const MIX_STEPS = 40;

function mixTrainSteps(runDir: string): number {
  const f = join(runDir, 'metrics.jsonl');
  if (!existsSync(f)) return 0;
  return readFileSync(f, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"kind":"train"') && l.includes('"stage":"mix"')).length;
}

test('rft pause: status paused after the current step; rft resume completes the run', async () => {
  const ws = tempWorkspace();
  try {
    const cfgFile = writeConfig(ws, tinyConfig({ sync_offset: 1 }, MIX_STEPS));
    const runDir = join(ws, '.rft', 'runs', 'p1');
    const run = spawn(
      process.execPath,
      [...cliCommand(), 'run', cfgFile, '--workspace', ws, '--run-id', 'p1', '--quiet'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    run.stdout.on('data', (b: Buffer) => (out += b.toString()));
    run.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((res) => run.on('exit', (code) => res(code)));
    const deadline = Date.now() + 90_000;
    while (mixTrainSteps(runDir) < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.ok(mixTrainSteps(runDir) >= 3, `the run never reached the MIX stage:\n${out}`);
    const p = spawnSync(process.execPath, [...cliCommand(), 'pause', 'p1', '--workspace', ws], { encoding: 'utf8' });
    assert.equal(p.status, 0, p.stderr);
    assert.match(p.stdout, /sent SIGUSR2/);
    assert.equal(await exited, 0, out);
    const reg = await RunRegistry.open(ws);
    assert.equal((await reg.get('p1'))?.status, 'paused');
    const atPause = mixTrainSteps(runDir);
    assert.ok(atPause < MIX_STEPS, `paused before the end (${atPause} of ${MIX_STEPS} MIX steps)`);

    const r = spawnSync(process.execPath, [...cliCommand(), 'resume', 'p1', '--workspace', ws, '--quiet'], {
      encoding: 'utf8',
      timeout: 180_000,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal((await reg.get('p1'))?.status, 'completed');
    const last = JSON.parse(r.stdout.trim().split('\n').pop()!) as { trainer_steps: number };
    assert.equal(last.trainer_steps, 2 + MIX_STEPS);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
