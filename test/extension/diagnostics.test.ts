// Taskset issues -> Problems panel diagnostics at the right line; debounced checks while typing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { vscode } from '../../tools/fake-vscode/harness.js';
import type { TasksetReport } from '../../backend/core/protocol.js';

const { TasksetDiagnostics, looksLikeTaskset, toDiagnostic } = await import('../../src/diagnostics.js');

test('an issue on line 3 marks the whole of line 3 (0-based 2), with field and severity', () => {
  const doc = vscode.textDocument(vscode.Uri.file('/w/tasksets/a.jsonl'), 'ok\nok\n{"id": 1, "prompt": ""}\n');
  const d = toDiagnostic(
    { file: '/w/tasksets/a.jsonl', line: 3, field: 'prompt', message: 'must not be empty', severity: 'error' },
    doc,
  );
  assert.equal(d.range.start.line, 2);
  assert.equal(d.range.end.character, '{"id": 1, "prompt": ""}'.length);
  assert.equal(d.message, "field 'prompt': must not be empty");
  assert.equal(d.severity, vscode.DiagnosticSeverity.Error);
  const w = toDiagnostic({ file: 'x', message: 'duplicate id', severity: 'warning' });
  assert.equal(w.range.start.line, 0);
  assert.equal(w.severity, vscode.DiagnosticSeverity.Warning);
});

test('which files are tasksets', () => {
  assert.ok(looksLikeTaskset('/w/tasksets/math.jsonl'));
  assert.ok(looksLikeTaskset('C:\\w\\taskset\\k12.csv'));
  assert.ok(!looksLikeTaskset('/w/src/package.json'));
  assert.ok(!looksLikeTaskset('/w/tasksets/readme.md'));
});

test('typing validates the unsaved text once after the debounce; the report fills the collection', async () => {
  const calls: { file: string; text?: string }[] = [];
  const reports: TasksetReport[] = [];
  const diags = new TasksetDiagnostics(
    async (file, text) => {
      calls.push({ file, text });
      const bad = (text ?? '').split('\n').findIndex((l) => l.includes('"prompt": ""'));
      return {
        file,
        tasks: 1,
        issues: bad >= 0 ? [{ file, line: bad + 1, field: 'prompt', message: 'empty', severity: 'error' }] : [],
      };
    },
    (r) => reports.push(r),
    20,
  );
  const uri = vscode.Uri.file('/w/tasksets/t.jsonl');
  const d1 = vscode.textDocument(uri, '{"id":"a","prompt":"x"}', true);
  const d2 = vscode.textDocument(uri, '{"id":"a","prompt":"x"}\n{"id":"b", "prompt": ""}', true);
  diags.schedule(d1 as never);
  diags.schedule(d2 as never);
  // Wait for the debounced call (a loaded machine delays timers), then a while longer for a second one.
  for (const deadline = Date.now() + 5000; reports.length < 1 && Date.now() < deadline; )
    await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 80));
  assert.equal(calls.length, 1, 'debounced to one call');
  assert.equal(calls[0]!.text, d2.getText());
  assert.equal(diags.collection.get(uri as never)?.[0]?.range.start.line, 1);
  assert.equal(reports.length, 1);
  // Saved (not dirty): the backend reads the file itself.
  await diags.check(vscode.textDocument(uri, '', false) as never);
  assert.equal(calls[1]!.text, undefined);
  assert.deepEqual(diags.collection.get(uri as never), []);
  await diags.check(vscode.textDocument(vscode.Uri.file('/w/src/x.json'), '{}') as never);
  assert.equal(calls.length, 2, 'non-taskset files are not sent');
  diags.dispose();
});
