// The memory synchronizer after kill -9 between checkpoints: the resumed run replays the steps whose
// batches were recorded (the sampler returns them again) instead of exploring them anew, so it ends
// with every explored rollout trained on exactly once: no re-explored steps, no rollouts left over.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { cliCommand } from '../../backend/coordinator/processes.js';
import { tempWorkspace } from './tiny-config.js';

const CONFIG = `name: tiny-memory
seed: 1
model: { size: tiny-0.4m, max_seq_len: 32 }
tokenizer: { kind: char }
taskset: { builtin: reverse, size: 50 }
eval: { builtin: reverse, size: 8, split: eval }
experts: { builtin: reverse, size: 8, seed: 99 }
workflow: { name: single_turn, reward: exact_match }
explorer: { tasks_per_step: 2, repeat_times: 2, sampling: { max_new_tokens: 4 }, eval_sampling: { max_new_tokens: 4 } }
trainer: { batch_size: 8 }
buffer: { storage: sqlite, max_staleness: 0 }
synchronizer: { method: memory }
stages:
  - { name: warmup, algorithm: { name: sft }, steps: 2, batch_size: 8 }
  - { name: mix, algorithm: { name: grpo }, steps: 10 }
`;

test('memory synchronizer, kill -9 between checkpoints, resume: no step explored twice, no rollout left untrained', async () => {
  const ws = tempWorkspace();
  try {
    const cfgFile = join(ws, 'tiny.rft.yaml');
    writeFileSync(cfgFile, CONFIG);
    const runDir = join(ws, '.rft', 'runs', 'km');
    const run = spawn(process.execPath, [...cliCommand(), 'run', cfgFile, '--workspace', ws, '--run-id', 'km', '--quiet', '--checkpoint-every', '4'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    run.stdout.on('data', (b: Buffer) => (out += b));
    run.stderr.on('data', (b: Buffer) => (out += b));
    const exited = new Promise((r) => run.once('exit', r));
    // Kill after the checkpoint at step 4 of MIX and two more trained steps (their batches recorded).
    let killed = false;
    const deadline = Date.now() + 120_000;
    while (!killed && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
      const f = join(runDir, 'metrics.jsonl');
      if (!existsSync(f)) continue;
      const mix = readFileSync(f, 'utf8').split('\n').filter((l) => l.includes('"kind":"train"') && l.includes('"stage":"mix"')).length;
      if (mix >= 6) {
        run.kill('SIGKILL');
        killed = true;
      }
    }
    assert.ok(killed, `never reached MIX step 6:\n${out}`);
    await exited;
    const r = spawnSync(process.execPath, [...cliCommand(), 'resume', 'km', '--workspace', ws, '--quiet'], { encoding: 'utf8', timeout: 180_000 });
    assert.equal(r.status, 0, r.stderr);

    const db = new Database(join(runDir, 'buffer.db'), { readonly: true });
    const left = db.prepare("SELECT COUNT(*) AS n FROM experiences WHERE run_id = 'km' AND source = 'usual' AND status = 'ok' AND use_count = 0").get() as { n: number };
    const twice = db.prepare("SELECT COUNT(*) AS n FROM experiences WHERE run_id = 'km' AND source = 'usual' AND use_count > 1").get() as { n: number };
    const steps = db.prepare("SELECT COUNT(DISTINCT step) AS n FROM consumption WHERE run_id = 'km' AND consumer = 'trainer'").get() as { n: number };
    db.close();
    assert.equal(steps.n, 12, 'every trainer step recorded once (2 warm-up + 10 MIX)');
    assert.equal(twice.n, 0, 'no rollout trained twice');
    assert.equal(left.n, 0, 'no rollout explored and left untrained (a re-explored step leaves one batch behind)');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
