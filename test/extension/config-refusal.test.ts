// Config errors a run would refuse are in Problems on the config before Start Training, and Start
// Training refuses with them (issue 28 item 1), with a real backend: a taskset file that is not
// there (at its key's line), then an unknown reward name (what `rft run --check` refuses: was only
// in the run's log, 60 s later, with no run row and no toast). No run is started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { activateWith, deactivateFrom, vscode, workspaceDir } from '../../tools/fake-vscode/harness.js';

const { startTraining } = await import('../../src/commands/training.js');

const CONFIG = `name: mine
model:
  size: tiny-0.4m
tokenizer:
  kind: char
taskset:
  path: data/math.jsonl
workflow:
  reward: math_answr
`;

test(
  'Start Training refuses a config with a missing file, then with an unknown reward name; both in Problems at their line',
  { timeout: 300_000 },
  async () => {
    vscode.resetFake();
    const ws = workspaceDir({ 'train.rft.yaml': CONFIG });
    const uri = vscode.Uri.file(join(ws, 'train.rft.yaml'));
    const { ctx, api } = await activateWith(ws);
    const s = api.services!;
    try {
      await startTraining(s, uri as never);
      let problems = vscode.recorded.diagnostics.get('rft-config')!.get(uri)!;
      assert.deepEqual(
        problems.map((d) => [d.range.start.line + 1, d.message.replace(/ \((looked for )?\/.*?;/, ' (…;')]),
        [[7, "taskset.path: no file 'data/math.jsonl' (…; paths are relative to the config file)"]],
      );
      let err = vscode.recorded.messages.find((m) => m.kind === 'error')!;
      assert.match(
        err.message,
        /^train\.rft\.yaml: 1 problem \(first: taskset\.path: no file 'data\/math\.jsonl'.*\)\. Fix: check the path \(paths in a config are relative to the config file\)\. The run was not started\.$/,
      );
      assert.deepEqual(err.items, ['Show Problems', 'Show Log']);
      assert.deepEqual(await s.client.request('runs/list', {}), [], 'no run was started');

      // The file is there now: what `rft run --check` refuses (the reward's name) is the problem.
      writeFileSync(join(ws, 'train.rft.yaml'), CONFIG.replace('data/math.jsonl', 'data.jsonl'));
      writeFileSync(join(ws, 'data.jsonl'), '{"prompt": "1+1?", "answer": "2"}\n');
      vscode.recorded.messages.length = 0;
      await startTraining(s, uri as never);
      problems = vscode.recorded.diagnostics.get('rft-config')!.get(uri)!;
      assert.equal(problems.length, 1);
      assert.equal(problems[0]!.range.start.line + 1, 9, 'at the reward key');
      assert.match(
        problems[0]!.message,
        /^workflow\.reward: unknown reward function 'math_answr' \(did you mean 'math_answer'\?\)/,
      );
      err = vscode.recorded.messages.find((m) => m.kind === 'error')!;
      assert.match(
        err.message,
        /unknown reward function 'math_answr'.*\. Fix: use 'math_answer'\. The run was not started\.$/,
      );
      assert.deepEqual(await s.client.request('runs/list', {}), [], 'no run was started');
    } finally {
      await deactivateFrom(ctx);
    }
  },
);

test(
  'Start Training refuses a config whose taskset has errors: the count per file, Show Problems, no run (issue 40 item 1)',
  { timeout: 300_000 },
  async () => {
    vscode.resetFake();
    const rows = [
      JSON.stringify({ key: 'k1', input: 'What is 1 plus 1?', label: '2', difficulty: 'easy' }),
      JSON.stringify({ key: 'k2', input: 'What is 2 plus 2?', label: '4', difficulty: 'hard' }),
      JSON.stringify({ key: 'k3', label: '6', difficulty: 'easy' }),
      '{"key": "k4", "input": ',
    ];
    const ws = workspaceDir({
      'train.rft.yaml': CONFIG.replace('data/math.jsonl', 'mine.jsonl')
        .replace('math_answr', 'math_answer')
        .replace(
          '  path: mine.jsonl\n',
          '  path: mine.jsonl\n  format: { prompt_key: input, response_key: label, id_key: key }\n',
        )
        // GRPO: the default MIX needs experts, which this config does not name (refused before the data check).
        .concat('algorithm:\n  name: grpo\n'),
      'mine.jsonl': `${rows.join('\n')}\n`,
    });
    const uri = vscode.Uri.file(join(ws, 'train.rft.yaml'));
    const { ctx, api } = await activateWith(ws);
    const s = api.services!;
    try {
      await startTraining(s, uri as never);
      assert.deepEqual(vscode.recorded.diagnostics.get('rft-config')?.get(uri) ?? [], [], 'the config itself is fine');
      const err = vscode.recorded.messages.find((m) => m.kind === 'error');
      assert.ok(err, 'refused');
      assert.equal(
        err.message,
        'train.rft.yaml: 2 errors in its data files (taskset mine.jsonl: 2). The run was not started. Fix them (each is in Problems); or start anyway: the run skips those records.',
      );
      assert.deepEqual(err.items, ['Show Problems', 'Start Anyway (skip 2)']);
      // Problems has the two errors, and the difficulty column of the user's own only as a warning.
      const diags = vscode.recorded.diagnostics.get('rft-taskset')!.get(vscode.Uri.file(join(ws, 'mine.jsonl')))!;
      assert.deepEqual(
        diags.map((d) => [d.range.start.line + 1, d.severity, d.message.split(':')[0]]),
        [
          [1, vscode.DiagnosticSeverity.Warning, "field 'difficulty'"],
          [3, vscode.DiagnosticSeverity.Error, "field 'input'"],
          [4, vscode.DiagnosticSeverity.Error, 'bad JSON'],
        ],
      );
      assert.deepEqual(await s.client.request('runs/list', {}), [], 'no run was started');

      // No valid record left (the run would fail at step 0): no way to start anyway.
      writeFileSync(join(ws, 'mine.jsonl'), `${rows.slice(2).join('\n')}\n`);
      vscode.recorded.messages.length = 0;
      await startTraining(s, uri as never);
      const none = vscode.recorded.messages.find((m) => m.kind === 'error')!;
      assert.match(
        none.message,
        /^train\.rft\.yaml: 2 errors .* mine\.jsonl has no valid record left \(a run would fail at its first step\)\.$/,
      );
      assert.deepEqual(none.items, ['Show Problems']);
      assert.deepEqual(await s.client.request('runs/list', {}), [], 'no run was started');
    } finally {
      await deactivateFrom(ctx);
    }
  },
);
