// Issue 40 item 5: Export Checkpoint… while the run goes on. The run deletes older checkpoints as it
// writes new ones; a version picked and then deleted while the format and folder are chosen is not
// exported as "…/v46: field 'dir': no such folder": the user is told why and offered the newest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { vscode } from '../../tools/fake-vscode/harness.js';
import type { RunInfo } from '../../backend/core/protocol.js';

const { exportCheckpoint } = await import('../../src/models/model-commands.js');

function setup() {
  const root = mkdtempSync(join(tmpdir(), 'rft-export-recheck-'));
  const ck = (v: number) => {
    const path = join(root, '.rft', 'runs', 'r1', 'checkpoints', `v${v}`);
    mkdirSync(path, { recursive: true });
    return { version: v, path, step: v };
  };
  const run: RunInfo = { id: 'r1', name: 'tiny', status: 'running', checkpoints: [ck(46), ck(40)] };
  const requests: { method: string; params: Record<string, unknown> }[] = [];
  const state = {
    runs: [run],
    async refreshRuns() {
      // The run went on: v52 written, v46 pruned (the registry drops it first).
      run.checkpoints = [ck(40), ck(52)];
    },
  };
  const client = {
    async request(method: string, params: Record<string, unknown>) {
      requests.push({ method, params });
      if (method === 'models/info') return { lora: undefined, tokenizer: { kind: 'hf' } };
      if (method === 'models/export') return { out: params.out, files: [] };
      throw new Error(`unexpected ${method}`);
    },
  };
  const output = { info() {}, warn() {}, error() {}, show() {} };
  return { root, run, requests, s: { client, state, output } as never };
}

test('a version deleted by the run while the format and folder are chosen: told why, the newest exported when agreed', async () => {
  vscode.resetFake();
  const { root, requests, s, run } = setup();
  const v46 = run.checkpoints![0]!;
  vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(root), name: 'ws', index: 0 }];
  // The format is chosen; meanwhile the run deletes v46.
  vscode.answers.quickPick.push((items) => {
    rmSync(v46.path, { recursive: true, force: true });
    return (items as { label: string }[]).find((i) => i.label === 'Hugging Face folder');
  });
  vscode.answers.openDialog.push([vscode.Uri.file(root)]);
  vscode.answers.message.push('Export v52');
  const out = await exportCheckpoint(s, { path: v46.path, runId: 'r1', runName: 'tiny', version: 46, step: 46 });
  const told = vscode.recorded.messages.find((m) => m.message.startsWith('v46 of tiny was deleted by the run'))!;
  assert.ok(told, JSON.stringify(vscode.recorded.messages));
  assert.equal(told.modal, true);
  assert.match(told.detail ?? '', /newest checkpoint instead, v52 \(step 52\)/);
  assert.deepEqual(told.items, ['Export v52']);
  const exp = requests.find((r) => r.method === 'models/export')!;
  assert.equal(exp.params.checkpoint, join(root, '.rft', 'runs', 'r1', 'checkpoints', 'v52'));
  assert.equal(out, join(root, 'tiny-v52-hf'));
  rmSync(root, { recursive: true, force: true });
});

test('deleted before its formats were read, and the newest declined: nothing exported, no raw "no such folder"', async () => {
  vscode.resetFake();
  const { root, requests, s, run } = setup();
  const v46 = run.checkpoints![0]!;
  rmSync(v46.path, { recursive: true, force: true });
  vscode.answers.message.push(undefined);
  const out = await exportCheckpoint(s, { path: v46.path, runId: 'r1', runName: 'tiny', version: 46, step: 46 });
  assert.equal(out, undefined);
  assert.deepEqual(
    requests.map((r) => r.method),
    [],
  );
  assert.match(vscode.recorded.messages[0]!.message, /^v46 of tiny was deleted by the run while you chose/);
  rmSync(root, { recursive: true, force: true });
});
