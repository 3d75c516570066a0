import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { EMPTY_INPUTS, inputsOf, parseFilter } from '../../webview/experience-browser/filters.js';
import { tint, tokenCells } from '../../webview/experience-browser/tokens.js';
import { UndoStack } from '../../webview/experience-browser/undo-stack.js';

test('filter inputs -> ExperienceFilter, with a message per bad field', () => {
  const ok = parseFilter({
    ...EMPTY_INPUTS,
    runId: ' r1 ',
    source: 'expert',
    minReward: '0.5',
    version: '2-5',
    text: 'foo',
    hideRejected: true,
  });
  assert.deepEqual(ok, {
    filter: {
      runId: 'r1',
      source: 'expert',
      minReward: 0.5,
      minVersion: 2,
      maxVersion: 5,
      text: 'foo',
      rejected: false,
    },
    errors: {},
  });
  assert.deepEqual(parseFilter({ ...EMPTY_INPUTS, version: '3' }).filter, { minVersion: 3, maxVersion: 3 });
  assert.deepEqual(parseFilter({ ...EMPTY_INPUTS, version: '4-' }).filter, { minVersion: 4 });
  const bad = parseFilter({ ...EMPTY_INPUTS, minReward: 'abc', maxReward: '1', version: 'x' });
  assert.match(bad.errors.minReward!, /'abc' is not a number/);
  assert.match(bad.errors.version!, /not a version/);
  assert.match(parseFilter({ ...EMPTY_INPUTS, minReward: '2', maxReward: '1' }).errors.maxReward!, /below/);
});

test('inputsOf round-trips a filter', () => {
  for (const f of [
    { runId: 'a', minVersion: 1, maxVersion: 4, rejected: false as const },
    { minVersion: 2 },
    { status: 'ok' as const, maxReward: 0.25 },
  ]) {
    assert.deepEqual(parseFilter(inputsOf(f)).filter, f);
  }
});

test('token colours: unlikely tokens and negative advantages are tinted, environment tokens are not', () => {
  assert.equal(tint(0, 'logprob').strength, 0);
  assert.ok(tint(-3, 'logprob').strength > tint(-0.1, 'logprob').strength);
  assert.match(tint(1, 'advantage').colour, /charts-green/);
  assert.match(tint(-1, 'advantage').colour, /charts-red/);
  const cells = tokenCells(
    { responseTokens: [10, 11, 12], logprobs: [-0.05, -2.5, 0], actionMask: [1, 1, 0], advantages: [0.5, 0.5, 0.5] },
    ['a', 'b', 'c'],
    'logprob',
  );
  assert.deepEqual(
    cells.map((c) => c.text),
    ['a', 'b', 'c'],
  );
  assert.match(cells[1]!.title, /token 11: log-prob -2\.5000 \(p = 0\.0821\)/);
  assert.match(cells[2]!.title, /environment token/);
  assert.equal(cells[2]!.colour, 'transparent');
  const noPieces = tokenCells({ responseTokens: [7], logprobs: [-1], actionMask: [1] }, undefined, 'advantage');
  assert.equal(noPieces[0]!.text, '⟨7⟩');
  assert.match(noPieces[0]!.title, /no advantage/);
});

test('undo stack: newest first, removal by id, bounded', () => {
  const u = new UndoStack(2);
  u.push({ changeId: '1', kind: 'rate', experienceIds: [], at: 1 });
  u.push({ changeId: '2', kind: 'promote', experienceIds: [], at: 2 });
  u.push({ changeId: '3', kind: 'reject', experienceIds: [], at: 3 });
  assert.equal(u.size, 2);
  assert.equal(u.peek()!.changeId, '3');
  u.remove('3');
  assert.equal(u.peek()!.changeId, '2');
});

test('the token view wraps a long run of tokens without spaces (overflow-wrap), not only at spaces', () => {
  const css = readFileSync(new URL('../../webview/experience-browser/style.css', import.meta.url), 'utf8');
  const rule = /\n\.tokens \{([^}]*)\}/.exec(css)?.[1] ?? '';
  assert.match(rule, /white-space: pre-wrap;/);
  assert.match(rule, /overflow-wrap: anywhere;/);
});
