// Failures told where the user acted (issue 28 item 1): one line with the cause and the fix and a
// Show Log button, the whole message in the log; a command that throws is caught and told the same
// way; a failed run's notification names its cause in one line (the log lines stay in the log);
// a warning that matters (experiences skipped) becomes a toast, once per run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until, vscode } from '../../tools/fake-vscode/harness.js';
import type { MetricsPoint, RunInfo } from '../../backend/core/protocol.js';

const { oneLineReason, errorFix } = await import('../../src/error-lines.js');
const { guardCommand, showBackendError } = await import('../../src/errors.js');
const { RunMonitor } = await import('../../src/run-events.js');

const CONFIG_ERROR = [
  'invalid config, 2 problem(s):',
  "  /w/train.rft.yaml: field 'workflow.reward': unknown reward function 'math_answr' (did you mean 'math_answer'?); known: code_tests, countdown, exact_match, k12, math_answer, environment",
  "  /w/train.rft.yaml: field 'trainer.lr': expected a number",
].join('\n');
const DIED =
  'trainer process died (signal SIGKILL); last log lines:\n  [..] INFO trainer: step 11\n  [..] INFO trainer: step 12';

test('one line: the first problem of a list, a died process without its log lines, the CLI line after log output', () => {
  assert.equal(
    oneLineReason(CONFIG_ERROR),
    "/w/train.rft.yaml: field 'workflow.reward': unknown reward function 'math_answr' (did you mean 'math_answer'?); known: code_tests, countdown, exact_match, k12, math_answer, environment (and 1 more)",
  );
  assert.equal(oneLineReason(DIED), 'trainer process died (signal SIGKILL)');
  assert.equal(
    oneLineReason('the run exited (code 1) before it started:\n[..] INFO engine: wasm\nrft: data/x.jsonl: not found'),
    'data/x.jsonl: not found',
  );
  assert.equal(oneLineReason('Error: boom'), 'boom');
  // The kinds of backend/core/errors.ts, as String(err) writes them; a bug's `at` line stays in the log.
  assert.equal(oneLineReason("ConflictError: experience 'e1' changed since"), "experience 'e1' changed since");
  assert.equal(oneLineReason('InfrastructureError: no reply within 5000 ms'), 'no reply within 5000 ms');
  assert.equal(oneLineReason('rft: x is undefined\nat f (backend/a.ts:3:9) (an internal error)'), 'x is undefined');
  assert.ok(oneLineReason('x'.repeat(1000)).length <= 240);
  assert.equal(errorFix(CONFIG_ERROR), "Fix: use 'math_answer'.");
  assert.equal(errorFix(DIED), 'Fix: Resume continues from the last checkpoint.');
  assert.match(errorFix("field 'taskset.path': no file 'data/math.jsonl'")!, /check the path/);
  assert.equal(errorFix('something else'), undefined);
});

test('a command that throws: one error line with the fix and Show Log; the whole message in the log', async () => {
  vscode.resetFake();
  const output = vscode.window.createOutputChannel('RFT Studio') as unknown as import('vscode').LogOutputChannel;
  const cmd = guardCommand(
    'Start Training',
    async () => {
      throw new Error(CONFIG_ERROR);
    },
    output,
  );
  vscode.answers.message.push('Show Log');
  assert.equal(await cmd(), undefined, 'the command resolves: nothing escapes to VS Code unshown');
  const [m] = vscode.recorded.messages;
  assert.equal(m!.kind, 'error');
  assert.doesNotMatch(m!.message, /\n/);
  assert.match(
    m!.message,
    /^Start Training: \/w\/train\.rft\.yaml: field 'workflow\.reward': unknown reward function 'math_answr'.* \(and 1 more\) Fix: use 'math_answer'\.$/,
  );
  assert.deepEqual(m!.items, ['Show Log']);
  assert.ok(
    vscode.recorded.log.some((l) => l.level === 'error' && l.line.includes("field 'trainer.lr': expected a number")),
    'every problem is in the log',
  );
  await until(() => vscode.recorded.executed.some((e) => e.command === '(output.show)'), 'Show Log opens the log');

  // Shown without waiting for the user: a caller's progress notification ends at once.
  vscode.resetFake();
  const never = vscode.window.showErrorMessage;
  (vscode.window as { showErrorMessage: unknown }).showErrorMessage = () => new Promise(() => undefined);
  try {
    const done = await Promise.race([
      showBackendError('Evaluate v3', new Error('rft eval failed: boom'), output).then(() => 'returned'),
      new Promise((r) => setTimeout(() => r('waited for the user'), 2000)),
    ]);
    assert.equal(done, 'returned');
  } finally {
    (vscode.window as { showErrorMessage: unknown }).showErrorMessage = never;
  }
});

const run = (o: Partial<RunInfo>): RunInfo => ({ id: 'r1', name: 'tiny', status: 'running', ...o });

function monitor() {
  const handlers = new Map<string, (x: unknown) => void>();
  const client = {
    onNotification: (m: string, f: (x: unknown) => void) => (handlers.set(m, f), { dispose() {} }),
    request: async () => ({
      path: '/w/.rft/logs/r1.log',
      lines: ['[..] INFO trainer: step 12', '[..] WARN processes: trainer died (SIGKILL)'],
    }),
  };
  const lines: string[] = [];
  const output = {
    info: (l: string) => lines.push(l),
    warn: (l: string) => lines.push(l),
    error: (l: string) => lines.push(l),
    show() {},
  };
  const m = new RunMonitor({ client: client as never, output: output as never, openDashboard: async () => undefined });
  m.know([]);
  return { handlers, lines, m };
}

test("a failed run's notification names the cause in one line; the log lines are in the log", async () => {
  vscode.resetFake();
  const { handlers, lines } = monitor();
  handlers.get('run/status')!(run({ step: 3 }));
  handlers.get('run/status')!(run({ status: 'failed', step: 12, statusReason: DIED }));
  await until(() => vscode.recorded.messages.some((x) => x.kind === 'error'), 'the failure notification');
  const shown = vscode.recorded.messages.find((x) => x.kind === 'error')!;
  assert.equal(
    shown.message,
    'Run tiny failed at step 12: trainer process died (signal SIGKILL) Fix: Resume continues from the last checkpoint.',
  );
  assert.deepEqual(shown.items, ['Show Log', 'Open Dashboard', 'Resume']);
  assert.ok(
    lines.some((l) => l.includes('INFO trainer: step 12')),
    'the log lines are in the output channel',
  );
});

test('a warning that matters becomes a toast, once per run', async () => {
  vscode.resetFake();
  const { handlers } = monitor();
  const p = (step: number): MetricsPoint => ({ runId: 'r1', step, at: 0, values: { skipped_experiences: 2 } });
  handlers.get('run/metrics')!(p(4));
  handlers.get('run/metrics')!(p(5));
  const warnings = vscode.recorded.messages.filter((x) => x.kind === 'warning');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!.message, /step 4 skipped 2 experience\(s\)/);
  assert.deepEqual(warnings[0]!.items, ['Show Log']);
});
