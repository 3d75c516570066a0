// Resume only where it can work (issue 41 item 5): a run refused on its config or data is not resumed
// with the same config (the refusal would come again: the toast offered Resume, which reused
// the broken config); a config file edited since the run started is a choice (`rft resume
// --use-new-config` / `--keep-config`), never taken or ignored silently; a process that refuses the
// run exits EXIT_REFUSED and is not restarted to meet the same refusal (the issue: "dies at step 1, twice").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { resumeState } from '../../backend/coordinator/resume-state.js';
import { EXIT_REFUSED, ProcessRefusedError, Worker } from '../../backend/coordinator/processes.js';
import { runInfo } from '../../backend/server/adapters/run-registry.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function config(steps: number): string {
  return stringify({
    name: 'r',
    seed: 1,
    model: { size: 'tiny-0.4m', max_seq_len: 32 },
    tokenizer: { kind: 'char' },
    taskset: { builtin: 'reverse', size: 20 },
    experts: { builtin: 'reverse', size: 6, seed: 9 },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    algorithm: { name: 'mix' },
    explorer: {
      tasks_per_step: 2,
      repeat_times: 2,
      sampling: { max_new_tokens: 4 },
      eval_sampling: { max_new_tokens: 4 },
    },
    trainer: { steps },
    placement: 'memory',
  });
}

test(
  'a run refused on its config is not resumable until its file changes; a changed file needs a choice; --use-new-config takes it',
  {
    timeout: 600_000,
  },
  async () => {
    const ws = mkdtempSync(join(tmpdir(), 'rft-resume-cfg-'));
    try {
      const file = join(ws, 'r.rft.yaml');
      writeFileSync(file, config(1));
      const first = await runJob({ config: loadRunConfig(file), configPath: file, workspace: ws, runId: 'r1' });
      assert.equal(first.trainer_steps, 1);
      const reg = await RunRegistry.open(ws);
      // As a run refused at its start is recorded (runJob's catch: the error's kind).
      await reg.setStatus('r1', 'failed', 'trainer.batch_size 16 leaves 8 rows for rollouts …', 'input');
      let rec = (await reg.get('r1'))!;
      assert.equal(rec.failure, 'input');
      const refused = runInfo(rec);
      assert.equal(refused.resumable, false);
      assert.match(
        refused.resumeRefusal!,
        /refused again\. Fix: edit .*r\.rft\.yaml, then resume with the new config\.$/,
      );
      await assert.rejects(runJob({ resume: 'r1', workspace: ws }), /run 'r1' cannot be resumed: .*Fix: edit/);

      // The user edits the file: resumable now, and the change is told (the editor asks, the CLI refuses without a flag).
      writeFileSync(file, config(3));
      rec = (await reg.get('r1'))!;
      assert.deepEqual(resumeState(rec), { resumable: true, configChanged: file });
      assert.equal(runInfo(rec).configChanged, file);
      const cli = spawnSync(
        process.execPath,
        ['--import', 'tsx', join(ROOT, 'backend/cli.ts'), 'resume', 'r1', '--workspace', ws, '--quiet'],
        {
          cwd: ROOT,
          encoding: 'utf8',
          timeout: 120_000,
        },
      );
      assert.equal(cli.status, 1, cli.stderr);
      assert.match(
        cli.stderr,
        /rft: run 'r1': its config .*r\.rft\.yaml changed since the run started\. Fix: rft resume r1 --use-new-config \(--keep-config resumes with the config it started with\)/,
      );
      assert.equal((await reg.get('r1'))!.status, 'failed', 'nothing ran');

      // --use-new-config (runJob's resumeConfig 'new'): the file as it is now, stored in the run's place.
      // (Its one stage was done at step 1: the resume ends it, with the new config stored.)
      const resumed = await runJob({ resume: 'r1', workspace: ws, resumeConfig: 'new' });
      assert.equal(resumed.run_id, 'r1');
      rec = (await reg.get('r1'))!;
      assert.equal(rec.status, 'completed');
      assert.equal((rec.config as { trainer: { steps: number } }).trainer.steps, 3);
      assert.equal(rec.failure, undefined);
      assert.deepEqual(resumeState(rec), { resumable: true }, 'the file the run took is no change');
      assert.match(readFileSync(join(rec.dir, 'config.yaml'), 'utf8'), /steps: 3/);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  },
);

test('a process that refuses the run exits EXIT_REFUSED and is not restarted: the run fails as a refusal', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-refused-'));
  try {
    const starts: string[] = [];
    // A trainer process on a run folder with no config: refused (InputError) before any step.
    const w = new Worker(
      {
        name: 'trainer',
        args: ['trainer-process', join(dir, 'no-run'), '--run-id', 'x', '--store', join(dir, 'no-run', 'buffer.db')],
        restarts: 1,
        onEvent: (e) => void starts.push(e.kind),
      },
      join(dir, 'logs'),
    );
    const err = await w.done.then(
      () => assert.fail('it refused'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ProcessRefusedError, String(err));
    assert.match((err as Error).message, /no-run\/config\.yaml: cannot read config/);
    assert.deepEqual(starts, ['started', 'died'], 'no restart');
    assert.equal(EXIT_REFUSED, 3);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
