// kill -9 of the trainer process in the middle of a run with restart: 0: the run stops cleanly (reported with the
// trainer's last log lines), `rft resume` completes it from the last checkpoint and buffer position,
// and the consumption records show no usual experience trained on twice and no step skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { cliCommand } from '../../backend/coordinator/processes.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { tinyConfig, tempWorkspace, writeConfig } from './tiny-config.js';

const MIX_STEPS = 10;
const TOTAL = 2 + MIX_STEPS;

function metricsOf(runDir: string): Record<string, unknown>[] {
  const f = join(runDir, 'metrics.jsonl');
  if (!existsSync(f)) return [];
  return readFileSync(f, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

async function checkConsumption(dbPath: string, runId: string) {
  const store = await openStore(dbPath);
  try {
    assert.equal(await store.lastConsumedStep('trainer', runId), TOTAL - 1);
    const seen = new Map<string, number>();
    for (let t = 0; t < TOTAL; t++) {
      const ids = await store.consumed('trainer', t, runId);
      assert.equal(ids.length, 8, `step ${t}: one full batch recorded`);
      const exps = await store.getMany(ids);
      assert.equal(exps.length, ids.length, `step ${t}: every consumed experience is in the buffer`);
      for (const e of exps) {
        if (e.source !== 'usual') continue; // expert rows are reused by design (cycle sampler)
        assert.ok(!seen.has(e.id), `usual experience ${e.id} trained on at steps ${seen.get(e.id)} and ${t}`);
        seen.set(e.id, t);
        assert.equal(e.useCount, 1, `${e.id}: use count ${e.useCount}`);
        assert.ok(
          e.modelVersion >= t - 1 && e.modelVersion <= t,
          `step ${t}: v${e.modelVersion} outside sync_offset 1`,
        );
      }
    }
    assert.equal(seen.size, MIX_STEPS * 4);
  } finally {
    await store.close();
  }
}

test('kill -9 of the trainer mid-run, then resume: completes, nothing trained twice', async () => {
  const ws = tempWorkspace();
  try {
    const cfgFile = writeConfig(ws, tinyConfig({ sync_offset: 1 }, MIX_STEPS, { restart: 0 }));
    const runDir = join(ws, '.rft', 'runs', 'k1');
    const coord = spawn(
      process.execPath,
      [...cliCommand(), 'run', cfgFile, '--workspace', ws, '--run-id', 'k1', '--quiet'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    coord.stdout.on('data', (b: Buffer) => (out += b.toString()));
    coord.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((res) => coord.on('exit', (code) => res(code)));
    // Wait until the MIX stage's trainer has done a few steps, then kill it.
    let killed: number | undefined;
    const deadline = Date.now() + 90_000;
    while (killed === undefined && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      const m = metricsOf(runDir);
      const mixTrain = m.filter((r) => r.kind === 'train' && r.stage === 'mix').length;
      const pid = m.filter((r) => r.kind === 'process' && r.component === 'trainer' && r.event === 'started').at(-1)
        ?.pid as number | undefined;
      if (mixTrain >= 4 && pid) {
        process.kill(pid, 'SIGKILL');
        killed = pid;
      }
    }
    assert.ok(killed, `trainer never reached the MIX stage:\n${out}`);
    const code = await exited;
    assert.notEqual(code, 0, 'the run must not report success after its trainer died');
    assert.match(out, /trainer process died \(signal SIGKILL\); last log lines/);
    const reg = await RunRegistry.open(ws);
    assert.equal((await reg.get('k1'))?.status, 'failed');
    const died = metricsOf(runDir).filter((r) => r.kind === 'process' && r.event === 'died');
    assert.equal(died.length, 1);
    assert.equal(died[0]!.component, 'trainer');

    const s = await runJob({ resume: 'k1', workspace: ws });
    assert.equal(s.trainer_steps, TOTAL);
    assert.equal((await reg.get('k1'))?.status, 'completed');
    await checkConsumption(join(runDir, 'buffer.db'), 'k1');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('by default (restart: 1) a killed trainer and a killed explorer are each restarted once and the run completes on its own', async () => {
  const ws = tempWorkspace();
  try {
    // No `restart:` in the config: the default absorbs one death of each process (issue 28 finding 9).
    const cfg = tinyConfig({ sync_offset: 1 }, MIX_STEPS);
    const runDir = join(ws, '.rft', 'runs', 'r1');
    const killed = new Set<string>();
    const pidOf = (m: Record<string, unknown>[], c: string) =>
      m.filter((r) => r.kind === 'process' && r.component === c && r.event === 'started').at(-1)?.pid as
        | number
        | undefined;
    const watcher = setInterval(() => {
      const m = metricsOf(runDir);
      const mixSteps = m.filter((r) => r.kind === 'train' && r.stage === 'mix').length;
      for (const [c, at] of [
        ['trainer', 3],
        ['explorer', 6],
      ] as const) {
        const pid = pidOf(m, c);
        if (!killed.has(c) && pid && mixSteps >= at) {
          killed.add(c);
          process.kill(pid, 'SIGKILL');
        }
      }
    }, 100);
    const s = await runJob({ config: cfg, workspace: ws, runId: 'r1' }).finally(() => clearInterval(watcher));
    assert.deepEqual([...killed].sort(), ['explorer', 'trainer']);
    assert.equal(s.trainer_steps, TOTAL);
    for (const c of ['trainer', 'explorer']) {
      const ev = metricsOf(runDir)
        .filter((r) => r.kind === 'process' && r.component === c)
        .map((r) => r.event);
      assert.ok(ev.includes('died') && ev.includes('restarted'), `${c}: ${ev.join(',')}`);
    }
    await checkConsumption(join(runDir, 'buffer.db'), 'r1');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
