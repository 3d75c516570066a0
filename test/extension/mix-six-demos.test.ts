// The MIX run of issue 41 item 5, from the editor with a real backend: a user with 6 expert
// demonstrations lets Start Training write the config from the template (MIX, 4 tasks x 4 samples,
// no batch_size); with the old template's `batch_size: 16` Start is refused with a toast that says
// the one fix (was: "give trainer.batch_size 32 or more, or explore fewer tasks", cut off), and with
// that fix the check passes; with the template's default sizes the run trains past step 1 (was: the
// trainer died at step 1, "expert share 8 rows … the buffer has 6 expert experiences"), each step
// 16 rollouts + 16 expert rows cycling through the 6 demonstrations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { activateWith, deactivateFrom, until, vscode, workspaceDir } from '../../tools/fake-vscode/harness.js';
import type { RunInfo } from '../../backend/core/protocol.js';
import { openStore } from '../../backend/buffer/storage/index.js';

const { startTraining } = await import('../../src/commands/training.js');

const TASKS = Array.from({ length: 30 }, (_, i) =>
  JSON.stringify({ prompt: `What is ${i} plus ${i % 7}?`, answer: String(i + (i % 7)) }),
);
const DEMOS = Array.from({ length: 6 }, (_, i) =>
  JSON.stringify({ prompt: `What is ${i} plus ${i}?`, response: `The answer is ${2 * i}.` }),
);

type Rec = Record<string, unknown>;
const trainRecords = (runDir: string): Rec[] => {
  const f = join(runDir, 'metrics.jsonl');
  if (!existsSync(f)) return [];
  return readFileSync(f, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Rec)
    .filter((r) => r.kind === 'train');
};

test(
  'MIX with 6 demonstrations from the template: batch_size 16 refused with one fix that passes; default sizes train past step 1',
  { timeout: 900_000 },
  async () => {
    vscode.resetFake();
    const ws = workspaceDir({
      'tasksets/math.jsonl': `${TASKS.join('\n')}\n`,
      'experts.jsonl': `${DEMOS.join('\n')}\n`,
    });
    const { ctx, api } = await activateWith(ws);
    const s = api.services!;
    let id = '';
    try {
      // Start Training -> Create a config from the template… -> the built-in tiny size.
      vscode.answers.quickPick.push((items) => (items as string[]).find((i) => i.includes('Create a config')));
      vscode.answers.quickPick.push((items) => (items as { label: string }[]).find((i) => i.label === 'tiny-0.4m'));
      await startTraining(s);
      const uri = vscode.Uri.file(join(ws, 'train.rft.yaml'));
      const template = readFileSync(uri.fsPath, 'utf8');
      assert.match(template, /^ {2}name: mix/m, 'MIX, as the template suggests with an experts file');
      assert.match(template, /^experts:\n {2}path: "experts\.jsonl"/m);
      assert.match(template, /^ {2}# batch_size: unset/m, 'no batch_size: it follows from the run');

      // The old template's batch_size 16: refused at Start, the toast says what and the one fix.
      writeFileSync(uri.fsPath, template.replace(/^ {2}# batch_size: unset.*$/m, '  batch_size: 16'));
      await startTraining(s, uri as never);
      const refused = vscode.recorded.messages.find((m) => m.kind === 'error')!;
      assert.equal(
        refused.message,
        'train.rft.yaml: trainer.batch_size: 16 rows leave 8 for rollouts; one explore step makes 16. Fix: set trainer.batch_size to 32. The run was not started.',
      );
      assert.ok(refused.message.length <= 160, `short enough for a toast: ${refused.message.length} characters`);
      // The detail stays in Problems.
      const problem = vscode.recorded.diagnostics.get('rft-config')!.get(uri)![0]!;
      assert.match(
        problem.message,
        /\(8 go to the expert share\); one explore step makes 16 \(explorer\.tasks_per_step 4 x repeat_times 4\)/,
      );
      assert.deepEqual(await s.client.request('runs/list', {}), [], 'no run was started');
      // The fix applied: the same check passes.
      writeFileSync(uri.fsPath, template.replace(/^ {2}# batch_size: unset.*$/m, '  batch_size: 32'));
      assert.deepEqual(
        (await s.configs.checkFile(uri as never)).filter((i) => i.severity !== 'warning'),
        [],
        'the fix passes the check Start runs',
      );

      // The template's default sizes, started from the editor: it trains past step 1.
      writeFileSync(uri.fsPath, template);
      vscode.recorded.messages.length = 0;
      await startTraining(s, uri as never);
      const run = (await s.client.request('runs/list', {}))[0] as RunInfo;
      assert.ok(run, 'a run was started');
      id = run.id;
      const runDir = join(ws, '.rft', 'runs', id);
      await until(
        () => trainRecords(runDir).length >= 3 || s.state.runs.find((r) => r.id === id)?.status === 'failed',
        'three trainer steps',
        600_000,
      );
      await s.state.refreshRuns();
      const now = s.state.runs.find((r) => r.id === id)!;
      assert.notEqual(now.status, 'failed', now.statusReason);
      assert.ok(!vscode.recorded.messages.some((m) => m.kind === 'error'), JSON.stringify(vscode.recorded.messages));
      const train = trainRecords(runDir).slice(0, 3);
      // 16 expert rows a step from 6 demonstrations: 6 distinct, passes 3, 6 and 8 over the set.
      assert.deepEqual(
        train.map((r) => [r.step, r.expert_rows, r.expert_unique, r.expert_epoch]),
        [
          [0, 16, 6, 3],
          [1, 16, 6, 6],
          [2, 16, 6, 8],
        ],
      );
      const store = await openStore(join(runDir, 'buffer.db'));
      try {
        for (let t = 0; t < 3; t++) {
          const rows = await store.getMany(await store.consumed('trainer', t, id));
          assert.equal(rows.filter((e) => e.source === 'usual').length, 16, `step ${t}: one explore step's rollouts`);
          assert.equal(rows.filter((e) => e.source === 'expert').length, 16, `step ${t}: the expert share`);
        }
      } finally {
        await store.close();
      }
      // The figures for the report: steps, expert epochs, reward.
      console.log(
        JSON.stringify({
          mix_six_demos: train.map((r) => ({
            step: r.step,
            expert_rows: r.expert_rows,
            expert_unique: r.expert_unique,
            expert_epoch: r.expert_epoch,
            batch_reward: r.batch_reward,
            loss: r.loss,
          })),
        }),
      );
    } finally {
      if (id) await s.client.request('runs/stop', { runId: id }).catch(() => undefined);
      await deactivateFrom(ctx);
    }
  },
);
