// The experience browser's state store (webview/experience-browser/store.ts): each typed action's
// change to the kept state and what it saves, undo stacks per buffer, the promoted-here marks that
// an undo or another buffer clears, and scrolling saved once it settles.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import type { BrowserState } from '../../webview/experience-browser/protocol.js';
import { BrowserStore, DEFAULT_STATE } from '../../webview/experience-browser/store.js';

function store(saved?: BrowserState) {
  const saves: BrowserState[] = [];
  const s = new BrowserStore(saved, (st) => saves.push(structuredClone(st)));
  return { s, saves };
}

test('the saved state is restored over the defaults, and a filter from the bar goes back to the top', () => {
  const { s, saves } = store({ ...DEFAULT_STATE, scrollTop: 520, selectedId: 'e1', colourBy: 'advantage' });
  assert.equal(s.state.colourBy, 'advantage');
  s.dispatch({ type: 'filterApplied', filter: { source: 'expert' }, sort: 'reward' });
  assert.deepEqual(saves, [{ ...s.state }]);
  assert.deepEqual(
    [s.state.filter, s.state.sort, s.state.scrollTop, s.state.selectedId],
    [{ source: 'expert' }, 'reward', 0, 'e1'],
  );
  // The host's preset filter keeps the scroll position and the sort.
  s.dispatch({ type: 'scrolled', top: 40 });
  s.dispatch({ type: 'filterSet', filter: { taskId: 't1' } });
  assert.deepEqual([s.state.filter, s.state.sort, s.state.scrollTop], [{ taskId: 't1' }, 'reward', 40]);
  assert.equal(saves.length, 2);
  s.dispatch({ type: 'selected', id: 'e2' });
  assert.equal(saves.at(-1)?.selectedId, 'e2');
});

test('one undo stack per buffer; another buffer clears the promoted marks and is saved once', () => {
  const { s, saves } = store();
  s.dispatch({ type: 'bufferShown', path: '/a.db' });
  s.undo.push({ changeId: 'c1', kind: 'promote', experienceIds: ['x'] } as never);
  s.promotedHere.set('x', 'x-expert');
  assert.equal(saves.at(-1)?.bufferPath, '/a.db');
  assert.ok(s.shows('/a.db') && !s.shows('/b.db'));
  s.dispatch({ type: 'bufferShown', path: '/b.db' });
  assert.equal(s.undo.size, 0);
  assert.equal(s.promotedHere.size, 0);
  s.dispatch({ type: 'bufferShown', path: '/a.db' });
  assert.equal(s.undo.peek()?.changeId, 'c1');
  assert.equal(saves.length, 3);
  // No buffer (closed): nothing saved, the state keeps the last buffer for a window reload.
  s.dispatch({ type: 'bufferShown', path: undefined });
  assert.equal(saves.length, 3);
  assert.ok(s.shows(undefined));
  assert.equal(s.state.bufferPath, '/a.db');
});

test('an undo frees the promote of the experiences it touched, by their id or their expert copy', () => {
  const { s } = store();
  s.promotedHere.set('a', 'a-expert');
  s.promotedHere.set('b', 'b-expert');
  s.promotedHere.set('c', 'c-expert');
  s.dispatch({ type: 'undone', experienceIds: ['a', 'b-expert'] });
  assert.deepEqual([...s.promotedHere.keys()], ['c']);
});

test('scrolling is saved once it settles, not on every scroll event', () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const { s, saves } = store();
    for (const top of [10, 20, 30]) s.dispatch({ type: 'scrolled', top });
    assert.equal(saves.length, 0);
    mock.timers.tick(200);
    assert.deepEqual(
      saves.map((x) => x.scrollTop),
      [30],
    );
  } finally {
    mock.timers.reset();
  }
});
