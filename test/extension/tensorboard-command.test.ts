// Open in TensorBoard (issue 44 item 3): the run's event folder goes to VS Code's TensorBoard
// integration where the Python extension provides it, else to a terminal running tensorboard or the
// clipboard; a run without event files says why. The Runs view offers it on every run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PACKAGE, vscode } from '../../tools/fake-vscode/harness.js';
import type { RunInfo } from '../../backend/core/protocol.js';
import type { Services } from '../../src/services.js';

const { openTensorBoard, tensorboardCommandLine, TENSORBOARD_COMMAND } = await import(
  '../../src/commands/tensorboard.js'
);

function services(runs: RunInfo[]): Services {
  const warn: string[] = [];
  return {
    state: { runs, refreshRuns: async () => undefined },
    output: { warn: (m: string) => void warn.push(m) },
  } as unknown as Services;
}
const run: RunInfo = { id: 'r1', name: 'tiny', status: 'running', tensorboardDir: '/w/.rft/runs/r1/tensorboard' };

test('with the Python extension: the folder is copied and its Launch TensorBoard runs', async () => {
  vscode.resetFake();
  vscode.externalCommands.add(TENSORBOARD_COMMAND);
  await openTensorBoard(services([run]), 'r1');
  assert.equal(vscode.recorded.clipboard, run.tensorboardDir);
  assert.ok(vscode.recorded.executed.some((e) => e.command === TENSORBOARD_COMMAND));
  assert.match(vscode.recorded.messages.at(-1)!.message, /Select another folder.*\/w\/\.rft\/runs\/r1\/tensorboard/);
});

test('without it: a terminal runs tensorboard --logdir on the folder, or the path is copied', async () => {
  vscode.resetFake();
  vscode.answers.message.push('Run tensorboard in a Terminal');
  await openTensorBoard(services([run]), run);
  assert.equal(vscode.recorded.terminals.length, 1);
  assert.deepEqual(vscode.recorded.terminals[0]!.sent, ["tensorboard --logdir '/w/.rft/runs/r1/tensorboard'"]);
  assert.ok(!vscode.recorded.executed.some((e) => e.command === TENSORBOARD_COMMAND));
  vscode.answers.message.push('Copy Path');
  await openTensorBoard(services([run]), 'r1');
  assert.equal(vscode.recorded.clipboard, run.tensorboardDir);
  assert.equal(vscode.recorded.terminals.length, 1, 'no second terminal');
});

test('a run without event files, and none at all from the palette, say why', async () => {
  vscode.resetFake();
  await openTensorBoard(services([{ id: 'r2', status: 'completed' }]), 'r2');
  assert.match(vscode.recorded.messages.at(-1)!.message, /no TensorBoard event files \(monitor\.tensorboard: false/);
  await openTensorBoard(services([{ id: 'r2', status: 'completed' }]));
  assert.match(vscode.recorded.messages.at(-1)!.message, /No run has TensorBoard event files yet/);
});

test('the command line quotes the folder for the shell', () => {
  assert.equal(tensorboardCommandLine("/a b/it's", false), `tensorboard --logdir '/a b/it'\\''s'`);
  assert.equal(tensorboardCommandLine("C:\\it's", true), `tensorboard --logdir 'C:\\it''s'`);
});

test('the Runs view offers Open in TensorBoard on every run', () => {
  const menus = (PACKAGE as unknown as { contributes: { menus: Record<string, { command: string; when: string }[]> } })
    .contributes.menus['view/item/context']!;
  const m = menus.find((x) => x.command === 'rftStudio.openTensorBoard');
  assert.ok(m?.when.includes('view == rftStudio.runs') && /viewItem =~ \/\^rftRun/.test(m.when));
});
