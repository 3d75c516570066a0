import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cutRepeats, repeatStopAt, DEFAULT_REPEAT } from '../../backend/explorer/repeat.js';

test('repeat detection fires where a loop becomes certain, not on short or varied text', () => {
  const loop = [5, 6, 7, ...Array.from({ length: 40 }, (_, i) => [1, 2, 3][i % 3]!)];
  const at = repeatStopAt(loop);
  // 3-token unit: needs ceil(24/3)=8 copies = 24 tokens after the 3-token preamble.
  assert.equal(at, 3 + 24);
  assert.equal(repeatStopAt([1, 1, 1, 1, 1]), -1, 'too short a span');
  const varied = Array.from({ length: 200 }, (_, i) => (i * 7919) % 101);
  assert.equal(repeatStopAt(varied), -1);
  const single = Array.from({ length: 30 }, () => 9);
  assert.equal(repeatStopAt(single), DEFAULT_REPEAT.minSpan);
});

test('cutRepeats truncates tokens and logprobs together and marks the sample', () => {
  const tokens = [4, ...Array.from({ length: 60 }, (_, i) => (i % 2 ? 8 : 9))];
  const g = { tokens, logprobs: tokens.map((_, i) => -i), finishReason: 'length' as string };
  assert.equal(cutRepeats(g), true);
  assert.equal(g.finishReason, 'repeat');
  assert.equal(g.tokens.length, g.logprobs.length);
  assert.equal(g.tokens.length, 1 + 24);
  assert.deepEqual(g.logprobs.slice(0, 2), [-0, -1]);
  const ok = { tokens: [1, 2, 3], logprobs: [0, 0, 0], finishReason: 'stop' };
  assert.equal(cutRepeats(ok), false);
  assert.equal(ok.finishReason, 'stop');
});
