// Issue 40 item 7: the Buffer view and the experience browser stay on the buffer the user has open
// when another run starts (its experts and edits do not vanish from view); the new run is announced
// with a choice to switch; a run-id filter that finds nothing here says where that run's rows are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { vscode } from '../../tools/fake-vscode/harness.js';
import type { RunInfo } from '../../backend/core/protocol.js';

const { startTraining, resumeTraining } = await import('../../src/commands/training.js');
const { runElsewhere } = await import('../../src/webviews/experience-browser.js');

const FIRST: RunInfo = {
  id: 'run-1',
  name: 'math-tiny',
  status: 'running',
  bufferPath: '/w/.rft/runs/run-1/buffer.db',
  createdAt: 1,
};
const SECOND: RunInfo = {
  id: 'run-2',
  name: 'math-tiny-2',
  status: 'running',
  bufferPath: '/w/.rft/runs/run-2/buffer.db',
  createdAt: 2,
};

function services(open: string | undefined, runs: RunInfo[]) {
  const opened: unknown[] = [];
  const state = {
    runs: [] as RunInfo[],
    bufferPath: open,
    async refreshRuns() {
      state.runs = runs;
    },
    async openBuffer(ref: { runId?: string }) {
      opened.push(ref);
      state.bufferPath = runs.find((r) => r.id === ref.runId)?.bufferPath;
    },
  };
  const client = {
    async request(method: string) {
      if (method === 'runs/start') return SECOND;
      if (method === 'runs/resume') return SECOND;
      throw new Error(`unexpected ${method}`);
    },
  };
  const output = { info() {}, warn() {}, error() {}, show() {} };
  const s = { client, state, output, configs: { checkFile: async () => [] }, openDashboard: async () => undefined };
  return { s: s as never, state, opened };
}

test("a second run starts: the views stay on the first run's buffer, and the message offers to switch", async () => {
  vscode.resetFake();
  const { s, state, opened } = services(FIRST.bufferPath, [FIRST, SECOND]);
  vscode.answers.message.push('Show Its Buffer');
  await startTraining(s, vscode.Uri.file('/w/second.rft.yaml') as never);
  const told = vscode.recorded.messages.find((m) => m.message.startsWith('Run run-2 started'))!;
  assert.match(told.message, /stay on math-tiny's buffer/);
  assert.deepEqual(told.items, ['Show Its Buffer', 'Show Log']);
  // The answer is handled after the message resolves.
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(opened, [{ runId: 'run-2' }], 'switched only when asked');
  assert.equal(state.bufferPath, SECOND.bufferPath);
});

test('a run starts with no buffer open (or its own): the views show its buffer, nothing to choose', async () => {
  vscode.resetFake();
  const { s, state, opened } = services(undefined, [SECOND]);
  await startTraining(s, vscode.Uri.file('/w/second.rft.yaml') as never);
  assert.deepEqual(opened, [{ runId: 'run-2' }]);
  assert.equal(state.bufferPath, SECOND.bufferPath);
  const told = vscode.recorded.messages.find((m) => m.message.startsWith('Run run-2 started'))!;
  assert.deepEqual(told.items, ['Show Log']);
});

test('Resume of another run keeps the open buffer too and offers its own', async () => {
  vscode.resetFake();
  const { s, state, opened } = services(FIRST.bufferPath, [FIRST, { ...SECOND, status: 'paused' }]);
  await resumeTraining(s, 'run-2');
  assert.deepEqual(opened, []);
  assert.equal(state.bufferPath, FIRST.bufferPath);
  assert.match(
    vscode.recorded.messages.at(-1)!.message,
    /resumed\. The Buffer view and browser stay on math-tiny's buffer/,
  );
});

test('a run-id filter that finds nothing here says where the run keeps its experiences', () => {
  const s = { state: { runs: [FIRST, SECOND], bufferPath: SECOND.bufferPath } } as never;
  assert.match(
    runElsewhere(s, 'run-1')!,
    /Run math-tiny \(run-1\) keeps its experiences in its own buffer, \/w\/\.rft\/runs\/run-1\/buffer\.db/,
  );
  assert.equal(runElsewhere(s, 'run-2'), undefined, 'its own buffer: nothing to add');
  assert.match(runElsewhere(s, 'nope')!, /No run of this workspace has the id 'nope'/);
});
