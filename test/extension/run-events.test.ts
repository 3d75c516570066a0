// A run's life in the output channel and failures in notifications with their reason and actions;
// the Runs tooltip says why a run failed; run configs' problems in Problems with a rename quick fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { vscode } from '../../tools/fake-vscode/harness.js';
import type { ConfigIssueAt, MetricsPoint, RunInfo } from '../../backend/core/protocol.js';

const { runEvents, metricEvents, RunMonitor } = await import('../../src/run-events.js');
const { describeRun, runTooltip } = await import('../../src/views/runs-tree.js');
const { ConfigDiagnostics, ConfigQuickFixes, suggestedRename } = await import('../../src/config-diagnostics.js');

const run = (o: Partial<RunInfo>): RunInfo => ({ id: 'r1', name: 'tiny', status: 'running', ...o });

test('status changes, checkpoints, stages and eval results become output lines', () => {
  assert.deepEqual(
    runEvents(undefined, run({ step: 0, configPath: '/w/t.rft.yaml' })).map((e) => e.line),
    ['Run tiny (r1) running at step 0 (config /w/t.rft.yaml)'],
  );
  const ck = runEvents(
    run({ checkpoints: [{ version: 0, path: '/c/0' }] }),
    run({
      checkpoints: [
        { version: 0, path: '/c/0' },
        { version: 10, path: '/c/10', step: 10 },
      ],
    }),
  );
  assert.deepEqual(
    ck.map((e) => e.line),
    ['Run tiny (r1): checkpoint v10 (step 10) at /c/10'],
  );
  const failed = runEvents(
    run({}),
    run({ status: 'failed', step: 12, statusReason: 'sequence of 120 tokens exceeds the model maxSeqLen 96' }),
  );
  assert.equal(failed[0]!.level, 'error');
  assert.match(failed[0]!.line, /failed at step 12: sequence of 120 tokens/);
  assert.deepEqual(
    runEvents(run({}), run({ status: 'stopped', step: 5 })).map((e) => e.line),
    ['Run tiny (r1) stopped at step 5'],
  );
  const p: MetricsPoint = {
    runId: 'r1',
    step: 40,
    at: 0,
    values: { eval_accuracy: 0.525, skipped_experiences: 1 },
    stage: 'mix',
  };
  assert.deepEqual(
    metricEvents(p, 'sft').map((e) => e.line),
    [
      "Run r1: stage 'mix' from step 40",
      'Run r1: eval accuracy 52.5% at step 40',
      "Run r1: step 40 skipped 1 experience(s) the trainer could not use (see the run's log)",
    ],
  );
  assert.equal(metricEvents({ ...p, values: {} }, 'mix').length, 0, 'same stage, no eval: nothing');
  const collapse = metricEvents(
    {
      runId: 'r1',
      step: 11,
      at: 0,
      values: {},
      warnings: [
        { code: 'policy_collapse', step: 11, message: 'policy collapse in stage main at step 11: ...', values: {} },
      ],
    },
    undefined,
  );
  assert.deepEqual(collapse, [{ level: 'warn', line: 'Run r1: policy collapse in stage main at step 11: ...' }]);
});

test('a failed run: reason and log tail in the output channel, a notification with Show Log / Open Dashboard / Resume', async () => {
  vscode.resetFake();
  const handlers = new Map<string, (x: unknown) => void>();
  const lines: { level: string; line: string }[] = [];
  const opened: string[] = [];
  const client = {
    onNotification: (m: string, f: (x: unknown) => void) => (handlers.set(m, f), { dispose() {} }),
    request: async (m: string, p: { runId: string }) => {
      assert.equal(m, 'runs/log');
      return {
        path: `/w/.rft/logs/${p.runId}.log`,
        lines: ['[..] INFO run: step 11', '[..] ERROR run: sequence of 120 tokens exceeds the model maxSeqLen 96'],
      };
    },
  };
  const output = {
    info: (l: string) => lines.push({ level: 'info', line: l }),
    warn: (l: string) => lines.push({ level: 'warn', line: l }),
    error: (l: string) => lines.push({ level: 'error', line: l }),
    show() {},
  };
  const m = new RunMonitor({
    client: client as never,
    output: output as never,
    openDashboard: async (id: string) => void opened.push(id),
  });
  m.know([run({ id: 'old', status: 'failed', statusReason: 'long ago' })]);
  vscode.answers.message.push('Open Dashboard');
  handlers.get('run/status')!(run({ step: 3 }));
  handlers.get('run/status')!(
    run({ status: 'failed', step: 12, statusReason: 'sequence of 120 tokens exceeds the model maxSeqLen 96' }),
  );
  const { until } = await import('../../tools/fake-vscode/harness.js');
  await until(() => opened.length === 1, 'Open Dashboard chosen');
  const shown = vscode.recorded.messages.find((x) => x.kind === 'error')!;
  assert.match(shown.message, /Run tiny failed at step 12: sequence of 120 tokens exceeds the model maxSeqLen 96/);
  assert.deepEqual(shown.items, ['Show Log', 'Open Dashboard', 'Resume']);
  assert.ok(lines.some((l) => l.level === 'error' && /failed at step 12/.test(l.line)));
  assert.ok(
    lines.some(
      (l) => l.level === 'error' && /Last lines of \/w\/.rft\/logs\/r1.log:\n {2}\[..\] INFO run: step 11/.test(l.line),
    ),
  );
  // Already-known runs are not news; a run first seen failed (died at once) is.
  m.follow([
    run({ id: 'old', status: 'failed', statusReason: 'long ago' }),
    run({ id: 'r2', name: 'r2', status: 'failed', statusReason: "taskset 'x.jsonl' not found" }),
  ]);
  await until(() => vscode.recorded.messages.filter((x) => x.kind === 'error').length === 2, 'second failure');
  assert.match(
    vscode.recorded.messages.filter((x) => x.kind === 'error')[1]!.message,
    /Run r2 failed: taskset 'x.jsonl' not found/,
  );
  assert.ok(!vscode.recorded.messages.some((x) => /long ago/.test(x.message)));
  // The registry's step (last checkpoint) is behind the live one: the failure is told at the step reached.
  handlers.get('run/status')!(run({ id: 'r3', name: 'r3', step: 330 }));
  handlers.get('run/status')!(run({ id: 'r3', name: 'r3', status: 'failed', step: 0, statusReason: 'out of memory' }));
  await until(() => vscode.recorded.messages.filter((x) => x.kind === 'error').length === 3, 'third failure');
  assert.match(
    vscode.recorded.messages.filter((x) => x.kind === 'error')[2]!.message,
    /Run r3 failed at step 330: out of memory/,
  );
  m.dispose();
});

test('a run refused on its config: the toast says what and the one fix, and offers no Resume (the same config would be refused again)', async () => {
  vscode.resetFake();
  const handlers = new Map<string, (x: unknown) => void>();
  const client = {
    onNotification: (m: string, f: (x: unknown) => void) => (handlers.set(m, f), { dispose() {} }),
    request: async () => ({ path: '/w/.rft/logs/r9.log', lines: [] }),
  };
  const output = { info() {}, warn() {}, error() {}, show() {} };
  const m = new RunMonitor({ client: client as never, output: output as never, openDashboard: async () => {} });
  m.know([]);
  const reason =
    'trainer.batch_size 16 leaves 8 rows for rollouts; one explore step makes 16 (explorer.tasks_per_step 4 x repeat_times 4). Fix: set trainer.batch_size to 32.';
  handlers.get('run/status')!(run({ id: 'r9', name: 'r9', status: 'running', step: 0 }));
  handlers.get('run/status')!(
    run({ id: 'r9', name: 'r9', status: 'failed', step: 0, statusReason: reason, resumable: false }),
  );
  const { until } = await import('../../tools/fake-vscode/harness.js');
  const shown = await until(() => vscode.recorded.messages.find((x) => x.kind === 'error'), 'the failure toast');
  assert.equal(
    shown.message,
    'Run r9 failed at step 0: trainer.batch_size 16 leaves 8 rows for rollouts; one explore step makes 16. Fix: set trainer.batch_size to 32.',
  );
  assert.deepEqual(shown.items, ['Show Log', 'Open Dashboard'], 'no Resume');
  // A run that can be resumed (a died process) still offers it.
  handlers.get('run/status')!(run({ id: 'r8', name: 'r8', status: 'running', step: 5 }));
  handlers.get('run/status')!(
    run({
      id: 'r8',
      name: 'r8',
      status: 'failed',
      step: 5,
      statusReason: 'trainer process died (signal SIGKILL)',
      resumable: true,
    }),
  );
  const died = await until(
    () => vscode.recorded.messages.filter((x) => x.kind === 'error')[1],
    'the second failure toast',
  );
  assert.deepEqual(died.items, ['Show Log', 'Open Dashboard', 'Resume']);
  m.dispose();
});

test('the Runs tooltip and description say why a run failed', () => {
  const t = runTooltip(
    run({
      status: 'failed',
      step: 0,
      statusReason: 'invalid config: trainer.lrr',
      configPath: '/w/t.rft.yaml',
      checkpoints: [{ version: 0, path: '/c/0' }],
    }),
  );
  assert.match(t, /failed because: invalid config: trainer.lrr/);
  assert.match(t, /checkpoints: 1 \(newest v0\)/);
});

test('the Runs item of a run from model.checkpoint shows its architecture, size and LoRA rank; a preset run has it in the tooltip', () => {
  const qwen = run({
    status: 'running',
    step: 3,
    model: {
      source: 'checkpoint',
      label: 'Qwen2ForCausalLM · 494M parameters · LoRA rank 8 · from Qwen/Qwen2-0.5B',
      architecture: 'Qwen2ForCausalLM',
      parameters: 494_032_768,
      loraRank: 8,
      from: 'Qwen/Qwen2-0.5B',
      tokenizer: "the model's own",
    },
  });
  assert.equal(describeRun(qwen), 'running · step 3 · Qwen2ForCausalLM 494M LoRA r8');
  assert.match(
    runTooltip(qwen),
    /\nmodel: Qwen2ForCausalLM · 494M parameters · LoRA rank 8 · from Qwen\/Qwen2-0\.5B\ntokenizer: the model's own/,
  );
  const preset = run({
    status: 'running',
    step: 3,
    model: {
      source: 'preset',
      label: 'preset tiny-0.4m · full fine-tuning · char (trained on the tasksets) tokenizer',
      architecture: 'tiny-0.4m',
      tokenizer: 'char (trained on the tasksets)',
    },
  });
  assert.equal(describeRun(preset), 'running · step 3');
  assert.match(runTooltip(preset), /model: preset tiny-0\.4m/);
});

test('config problems in Problems at the key line; an unknown key gets a rename quick fix', async () => {
  vscode.resetFake();
  const text = 'name: t\ntrainer:\n  lrr: 0.001\n';
  const issues: ConfigIssueAt[] = [
    { line: 3, field: 'trainer.lrr', message: "unknown key 'lrr' (did you mean 'lr'?)" },
  ];
  const calls: { file: string; text?: string }[] = [];
  const diags = new ConfigDiagnostics(async (file, t) => (calls.push({ file, text: t }), { issues }), 10);
  const uri = vscode.Uri.file('/w/train.rft.yaml');
  const doc = vscode.textDocument(uri, text, true);
  const got = await diags.check(doc as never);
  assert.equal(got!.length, 1);
  assert.equal(calls[0]!.text, text, 'unsaved text is validated');
  const d = diags.collection.get(uri as never)![0]!;
  assert.equal(d.range.start.line, 2);
  assert.equal(d.range.start.character, 2, 'starts at the key, after the indentation');
  assert.equal(d.message, "trainer.lrr: unknown key 'lrr' (did you mean 'lr'?)");
  assert.deepEqual(suggestedRename(d.message), { from: 'lrr', to: 'lr' });
  const fixes = new ConfigQuickFixes().provideCodeActions(
    doc as never,
    d.range as never,
    { diagnostics: [d] } as never,
  );
  assert.equal(fixes.length, 1);
  assert.equal(fixes[0]!.title, "Rename 'lrr' to 'lr'");
  const edit = (
    fixes[0]!.edit as unknown as {
      edits: { range: { start: { line: number; character: number }; end: { character: number } }; text: string }[];
    }
  ).edits[0]!;
  assert.deepEqual(
    [edit.range.start.line, edit.range.start.character, edit.range.end.character, edit.text],
    [2, 2, 5, 'lr'],
  );
  assert.equal(
    await diags.check(vscode.textDocument(vscode.Uri.file('/w/tasksets/a.yaml'), '') as never),
    undefined,
    'only *.rft.yaml',
  );
  diags.dispose();
});
