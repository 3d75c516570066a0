// Issue 40 item 12: a buffer the user exported as JSONL (Export Buffer) is experiences, not tasks:
// the Tasksets view does not list it as a taskset (its promptText / responseText looked like one).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import '../../tools/fake-vscode/harness.js';
import type { Experience } from '../../backend/core/types.js';

const { detectTaskset } = await import('../../src/taskset-detect.js');

const exp = (i: number): Experience => ({
  id: `e${i}`,
  taskId: `t${i}`,
  groupId: `g${i}`,
  runId: 'r1',
  source: 'usual',
  promptTokens: [1, 2],
  promptText: `What is ${i}+${i}?`,
  responseTokens: [3],
  responseText: String(2 * i),
  actionMask: [1],
  logprobs: [-0.5],
  modelVersion: 3,
  reward: 1,
  status: 'ok',
  useCount: 0,
  createdAt: i,
});

test('an exported buffer is not detected as a taskset; a taskset with the same texts is', () => {
  const exported = [1, 2, 3].map((i) => JSON.stringify(exp(i))).join('\n');
  assert.equal(detectTaskset('/w/buffer.jsonl', exported), undefined);
  const tasks = [1, 2, 3].map((i) =>
    JSON.stringify({ id: `t${i}`, prompt: `What is ${i}+${i}?`, answer: String(2 * i) }),
  );
  assert.ok(detectTaskset('/w/mine.jsonl', tasks.join('\n')));
});
