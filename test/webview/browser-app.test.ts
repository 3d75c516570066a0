// The experience browser app in a DOM: first paint, filters, detail with token colouring, group
// view, curation requests with undo, and state kept with setState.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ExperienceSummary } from '../../backend/core/protocol.js';
import type { Experience } from '../../backend/core/types.js';
import { mountBrowser } from '../../webview/experience-browser/app.js';
import type { BrowserRequests, BrowserState } from '../../webview/experience-browser/protocol.js';
import { host, tick, until } from './dom.js';

function exp(i: number): Experience {
  return {
    id: `e${i}`,
    taskId: `t${i % 3}`,
    groupId: `g${Math.floor(i / 4)}`,
    runId: 'r',
    source: 'usual',
    promptTokens: [1],
    promptText: `prompt ${i}`,
    responseTokens: [5, 6, 7],
    responseText: `resp ${i}`,
    actionMask: [1, 1, 0],
    logprobs: [-0.1, -3, 0],
    advantages: [1, -1, 0],
    modelVersion: 2,
    reward: i / 100,
    status: 'ok',
    useCount: 0,
    createdAt: i,
    rewardDetails: { format: 1, correct: i % 2 === 0 },
  };
}
const DATA = Array.from({ length: 1000 }, (_, i) => exp(i));
const summary = (e: Experience): ExperienceSummary => ({
  id: e.id,
  taskId: e.taskId,
  groupId: e.groupId,
  runId: e.runId,
  source: e.source,
  status: e.status,
  reward: e.reward,
  modelVersion: e.modelVersion,
  createdAt: e.createdAt,
  promptPreview: e.promptText,
  responsePreview: e.responseText,
  responseTokens: 3,
  useCount: e.useCount,
  ...(e.feedback ? { feedback: e.feedback } : {}),
});

function handlers(log: { method: string; params: unknown }[] = []) {
  let change = 0;
  return {
    list: (p: BrowserRequests['list']['params']) => {
      const rows = DATA.filter((e) => !p.filter.text || e.responseText.includes(p.filter.text)).filter(
        (e) => !p.filter.taskId || e.taskId === p.filter.taskId,
      );
      return { total: rows.length, rows: rows.slice(p.offset, p.offset + p.limit).map(summary) };
    },
    get: (p: { id: string }) => ({ ...DATA.find((e) => e.id === p.id)!, responsePieces: ['fo', 'o', '!'] }),
    group: (p: { groupId: string }) => DATA.filter((e) => e.groupId === p.groupId),
    promote: (p: unknown) => (
      log.push({ method: 'promote', params: p }),
      { changeId: String(++change), kind: 'promote', experienceIds: [], at: 0, expertId: 'x' }
    ),
    reject: (p: unknown) => (
      log.push({ method: 'reject', params: p }),
      { changeId: String(++change), kind: 'reject', experienceIds: [], at: 0 }
    ),
    rate: (p: unknown) => (
      log.push({ method: 'rate', params: p }), { changeId: String(++change), kind: 'rate', experienceIds: [], at: 0 }
    ),
    bulkPromote: (p: unknown) => (
      log.push({ method: 'bulkPromote', params: p }),
      { changeId: 'bulk:9', kind: 'bulk-promote', experienceIds: ['e1', 'x1', 'e2', 'x2'], at: 0, count: 2 }
    ),
    bulkPreview: (p: unknown) => (
      log.push({ method: 'bulkPreview', params: p }), { count: 2, tasks: 2, minReward: 0.9, maxReward: 0.99 }
    ),
    undo: (p: { changeId?: string }) => (
      log.push({ method: 'undo', params: p }),
      { undone: p.changeId ? { changeId: p.changeId, kind: 'rate', experienceIds: [], at: 0 } : null }
    ),
  };
}

const click = (el: Element | null) =>
  el!.dispatchEvent(
    new (el!.ownerDocument.defaultView as unknown as typeof globalThis).Event('click', { bubbles: true }),
  );

test('first paint lists rows; selecting one shows prompt, reward details and coloured tokens with hover values', async () => {
  const h = host<BrowserRequests>(handlers());
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  h.notify('bufferChanged', {
    path: '/b.db',
    counts: { usual: 1000, expert: 0, taskset: 3, rejected: 0, infraFailure: 0 },
  });
  await app.firstPaint;
  assert.equal(h.document.querySelector('.count')!.textContent, '1,000 experiences');
  assert.equal(h.document.querySelector('.counts')!.textContent, '1,000 usual · 0 expert');
  const first = h.document.querySelector('.vlist-row[data-id="e0"]');
  assert.ok(first);
  click(first!.querySelector('.resp'));
  await until(() => h.document.querySelector('.detail h2')?.textContent === 'e0', 'detail');
  assert.equal(h.document.querySelector('.detail .prompt')!.textContent, 'prompt 0');
  const toks = Array.from(h.document.querySelectorAll('.detail .tok')) as HTMLElement[];
  assert.deepEqual(
    toks.map((t) => t.textContent),
    ['fo', 'o', '!'],
  );
  assert.match(toks[1]!.title, /log-prob -3\.0000/);
  assert.match(toks[2]!.title, /environment token/);
  // (happy-dom drops color-mix() from style; the colour itself is checked in filters-tokens.test.ts)
  assert.ok(Number(toks[1]!.dataset.strength) > Number(toks[0]!.dataset.strength));
  assert.equal(toks[2]!.dataset.strength, '0');
  assert.equal(h.document.querySelectorAll('.reward-details tr').length, 2);
  assert.equal((h.api.state as BrowserState).selectedId, 'e0');
  await h.close();
});

test('typing a filter sends one debounced list request with the parsed filter; bad input is shown, not sent', async () => {
  const h = host<BrowserRequests>(handlers());
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await app.firstPaint;
  const text = h.document.getElementById('f-text')!;
  (text as unknown as { value: string }).value = 'resp 99';
  text.dispatchEvent(new (h.window as unknown as typeof globalThis).Event('input', { bubbles: true }));
  await until(
    () =>
      h.requests.some(
        (r) => r.method === 'list' && (r.params as { filter: { text?: string } }).filter.text === 'resp 99',
      ),
    'filtered list',
  );
  await until(() => h.document.querySelector('.count')!.textContent === '11 experiences', 'filtered count');
  assert.deepEqual((h.api.state as BrowserState).filter, { text: 'resp 99' });

  const n = h.requests.length;
  const min = h.document.getElementById('f-minReward')!;
  (min as unknown as { value: string }).value = 'lots';
  min.dispatchEvent(new (h.window as unknown as typeof globalThis).Event('input', { bubbles: true }));
  await tick(350);
  assert.equal(h.requests.length, n, 'no request with a bad filter');
  assert.match(h.document.querySelector('.message')!.textContent!, /'lots' is not a number/);
  assert.ok(min.hasAttribute('invalid'));
  await h.close();
});

test('curation: promote, edit then promote, reject, rate, bulk, undo the latest', async () => {
  const log: { method: string; params: unknown }[] = [];
  const h = host<BrowserRequests>(handlers(log));
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  await app.select('e5');
  await until(() => h.document.getElementById('promote'), 'actions');
  click(h.document.getElementById('promote'));
  await until(() => log.length === 1, 'promote');
  assert.deepEqual(log[0], { method: 'promote', params: { id: 'e5' } });
  await until(() => h.document.querySelector('.message')!.textContent === 'Promoted e5 to expert', 'message');

  await until(() => h.document.getElementById('edit-promote'), 'actions re-rendered');
  click(h.document.getElementById('edit-promote'));
  const area = h.document.getElementById('edit-text')!;
  assert.equal((area as unknown as { value: string }).value, 'resp 5', 'editor starts from the response');
  (area as unknown as { value: string }).value = 'a better answer';
  click(h.document.getElementById('edit-confirm'));
  await until(() => log.length === 2, 'edited promote');
  assert.deepEqual(log[1], { method: 'promote', params: { id: 'e5', editedResponse: 'a better answer' } });

  await until(() => h.document.getElementById('reject'), 'actions');
  click(h.document.getElementById('reject'));
  await until(() => log.length === 3, 'reject');
  await until(() => h.document.querySelector('.rate-btn[data-rating="4"]'), 'rate buttons');
  click(h.document.querySelector('.rate-btn[data-rating="4"]'));
  await until(() => log.length === 4, 'rate');
  assert.deepEqual(log[3], { method: 'rate', params: { id: 'e5', rating: 4 } });
  assert.equal(app.undo.size, 4);

  click(h.document.getElementById('undo'));
  await until(() => log.length === 5, 'undo');
  assert.deepEqual(log[4], { method: 'undo', params: { changeId: '4' } });
  await until(() => app.undo.size === 3, 'undo stack popped');

  await h.close();
});

test('group view shows the samples of the GRPO group side by side, best first', async () => {
  const h = host<BrowserRequests>(handlers());
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  await app.select('e5');
  await until(() => h.document.getElementById('show-group'), 'group button');
  click(h.document.getElementById('show-group'));
  await until(() => h.document.querySelectorAll('.group .sample').length === 4, 'group columns');
  const ids = Array.from(h.document.querySelectorAll('.group .sample')).map((s) => (s as HTMLElement).dataset.id);
  assert.deepEqual(ids, ['e7', 'e6', 'e5', 'e4']);
  assert.ok(h.document.querySelector('.group .sample.selected[data-id="e5"]'));
  await h.close();
});

test('state survives the panel being hidden: filter, selection and colouring are restored', async () => {
  const saved: BrowserState = {
    filter: { taskId: 't1' },
    sort: 'reward',
    descending: true,
    scrollTop: 0,
    selectedId: 'e4',
    colourBy: 'advantage',
    view: 'detail',
  };
  const h = host<BrowserRequests>(handlers(), saved);
  const app = mountBrowser(h.root, h.ipc as never, saved);
  assert.equal((h.document.getElementById('f-taskId') as unknown as { value: string }).value, 't1');
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await app.firstPaint;
  const list = h.requests.find((r) => r.method === 'list')!.params as BrowserRequests['list']['params'];
  assert.deepEqual(list.filter, { taskId: 't1' });
  assert.equal(list.sort, 'reward');
  await until(() => h.document.querySelector('.detail h2')?.textContent === 'e4', 'restored selection');
  assert.match((h.document.querySelector('.detail .tok') as HTMLElement).title, /advantage 1\.0000/);
  await h.close();
});

const input = (h: { window: unknown }, el: Element, value: string) => {
  (el as unknown as { value: string }).value = value;
  el.dispatchEvent(new (h.window as unknown as typeof globalThis).Event('input', { bubbles: true }));
};

test('a narrowed filter leaves only matching rows in the DOM (none hidden, none clickable from before)', async () => {
  const h = host<BrowserRequests>(handlers());
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await app.firstPaint;
  assert.ok(h.document.querySelectorAll('.vlist-row').length > 11, 'the unfiltered list fills the view');
  input(h, h.document.getElementById('f-text')!, 'resp 99');
  await until(() => h.document.querySelector('.count')!.textContent === '11 experiences', 'filtered count');
  await until(() => h.document.querySelectorAll('.vlist-row[data-id]').length === 11, 'rows redrawn');
  const rows = Array.from(h.document.querySelectorAll('.vlist-row')) as HTMLElement[];
  assert.equal(rows.length, 11, 'exactly the matching rows exist');
  for (const r of rows) assert.match(r.querySelector('.resp')!.textContent!, /resp 99/);
  assert.equal(h.document.querySelectorAll('[hidden].vlist-row').length, 0);
  // Narrow further to one match: one row.
  input(h, h.document.getElementById('f-text')!, 'resp 999');
  await until(() => h.document.querySelector('.count')!.textContent === '1 experience', 'singular');
  await until(() => h.document.querySelectorAll('.vlist-row').length === 1, 'one row');
  await h.close();
});

test('bulk promote: preview with count and reward threshold, confirmation, count in the message, one undo for the batch', async () => {
  const log: { method: string; params: unknown }[] = [];
  const h = host<BrowserRequests>(handlers(log));
  const app = mountBrowser(h.root, h.ipc as never, {
    ...(await import('../../webview/experience-browser/app.js')).DEFAULT_STATE,
    filter: { runId: 'r' },
  });
  input(h, h.document.getElementById('bulk-k')!, '2');
  input(h, h.document.getElementById('bulk-min')!, '0.9');
  click(h.document.getElementById('bulk-promote'));
  await until(() => h.document.getElementById('bulk-confirm'), 'confirmation');
  assert.deepEqual(
    log.map((l) => l.method),
    ['bulkPreview'],
    'nothing promoted before the confirmation',
  );
  assert.deepEqual(log[0]!.params, { topK: 2, filter: { runId: 'r', minReward: 0.9 } });
  assert.match(
    h.document.querySelector('.bulk-preview')!.textContent!,
    /Promote 2 experiences from 2 tasks \(top 2 per task, reward ≥ 0\.9; rewards 0\.90–0\.99\)/,
  );
  assert.equal(h.document.getElementById('bulk-confirm')!.textContent, 'Promote 2');
  click(h.document.getElementById('bulk-confirm'));
  await until(() => log.length === 2, 'bulk promote');
  assert.deepEqual(log[1], { method: 'bulkPromote', params: { topK: 2, filter: { runId: 'r', minReward: 0.9 } } });
  await until(
    () => /Promoted 2 experiences/.test(h.document.querySelector('.message')!.textContent!),
    'count in the message',
  );
  assert.ok((h.document.querySelector('.bulk-confirm') as HTMLElement).hidden);
  assert.equal(app.undo.size, 1, 'the batch is one undoable change');
  click(h.document.getElementById('undo'));
  await until(() => log.length === 3, 'undo');
  assert.deepEqual(log[2], { method: 'undo', params: { changeId: 'bulk:9' } });
  // Cancel changes nothing.
  click(h.document.getElementById('bulk-promote'));
  await until(() => h.document.getElementById('bulk-cancel'), 'second preview');
  click(h.document.getElementById('bulk-cancel'));
  await tick(20);
  assert.deepEqual(
    log.map((l) => l.method),
    ['bulkPreview', 'bulkPromote', 'undo', 'bulkPreview'],
  );
  await h.close();
});

test('promote is disabled after promoting; undo is per buffer; stale messages are cleared', async () => {
  const log: { method: string; params: unknown }[] = [];
  const h = host<BrowserRequests>(handlers(log));
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  h.notify('bufferChanged', { path: '/a.db', counts: undefined });
  await app.select('e5');
  await until(() => h.document.getElementById('promote'), 'actions');
  click(h.document.getElementById('promote'));
  await until(() => h.document.querySelector('.message')!.textContent === 'Promoted e5 to expert', 'promoted');
  await until(() => h.document.getElementById('promote')?.hasAttribute('disabled'), 'disabled after promoting');
  click(h.document.getElementById('promote'));
  await tick(20);
  assert.equal(log.filter((l) => l.method === 'promote').length, 1, 'a second click promotes nothing');
  // Another buffer: its undo stack is empty; Undo does not touch /a.db's change.
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await until(() => app.undo.size === 0, 'fresh stack');
  assert.equal(h.document.querySelector('.message')!.textContent, '', "the old buffer's message is gone");
  click(h.document.getElementById('undo'));
  await until(() => /Nothing to undo/.test(h.document.querySelector('.message')!.textContent!), 'nothing to undo');
  assert.equal(log.filter((l) => l.method === 'undo').length, 0);
  // Back to /a.db: its change is still there to undo.
  h.notify('bufferChanged', { path: '/a.db', counts: undefined });
  assert.equal(app.undo.size, 1);
  await h.close();
});

test('listbox keys, sort order toggle, column headers, labelled filters, ids shortened in the middle', async () => {
  const h = host<BrowserRequests>(handlers());
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await app.firstPaint;
  const list = h.document.querySelector('[role="listbox"]')!;
  const key = (k: string) =>
    list.dispatchEvent(
      new (h.window as unknown as typeof globalThis).KeyboardEvent('keydown', { key: k, bubbles: true }),
    );
  key('ArrowDown');
  await until(() => app.state.selectedId === 'e0', 'first row selected');
  key('ArrowDown');
  await until(() => app.state.selectedId === 'e1', 'next row');
  await until(
    () => h.document.querySelector('.vlist-row.selected')?.getAttribute('aria-selected') === 'true',
    'aria-selected',
  );
  key('ArrowUp');
  await until(() => app.state.selectedId === 'e0', 'previous row');

  const n = h.requests.length;
  click(h.document.getElementById('f-order'));
  await until(
    () =>
      h.requests
        .slice(n)
        .some((r) => r.method === 'list' && (r.params as { descending: boolean }).descending === false),
    'ascending list',
  );
  assert.equal(h.document.getElementById('f-order')!.textContent, '↑ ascending');

  assert.deepEqual(
    Array.from(h.document.querySelectorAll('.list-head span'))
      .map((s) => s.textContent)
      .filter(Boolean),
    ['reward', 'task', 'ver', 'used', 'response'],
  );
  const labels = Array.from(h.document.querySelectorAll('label.field .field-label')).map((l) => l.textContent);
  for (const l of ['Run', 'Task', 'Reward ≥', 'Reward ≤', 'Model version', 'Text', 'Top k per task', 'with reward ≥'])
    assert.ok(labels.includes(l), `label ${l}`);
  const { middleEllipsis } = await import('../../webview/experience-browser/app.js');
  assert.equal(middleEllipsis('arith-train-000123', 12), 'arith…000123');
  assert.equal(middleEllipsis('t1'), 't1');
  await h.close();
});

// Issue 28: an expert shows how many times the trainer used it; search matches are marked; a
// rejected row cannot be rejected again; one key per action; a failure says "Promote failed".
test("curation at work: an expert's use count in the list and the detail", async () => {
  const expert: Experience = {
    ...exp(1),
    id: 'x1',
    source: 'expert',
    modelVersion: -1,
    useCount: 19,
    responseText: 'worked answer',
  };
  const fresh: Experience = { ...exp(2), id: 'x2', source: 'expert', modelVersion: -1, useCount: 0 };
  const rows = [expert, fresh, exp(3)];
  const h = host<BrowserRequests>({
    ...handlers(),
    list: () => ({ total: rows.length, rows: rows.map(summary) }),
    get: (p: { id: string }) => rows.find((e) => e.id === p.id)!,
  });
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await app.firstPaint;
  const uses = (id: string) => h.document.querySelector(`.vlist-row[data-id="${id}"] .uses`)!;
  await until(() => h.document.querySelector('.vlist-row[data-id="x1"]'), 'rows');
  assert.equal(uses('x1').textContent, '19×');
  assert.equal((uses('x1') as HTMLElement).title, 'used by the trainer 19 times');
  assert.equal(uses('x2').textContent, '0×');
  assert.equal(uses('e3').textContent, '', 'a usual row shows no count');
  await app.select('x1');
  await until(() => h.document.querySelector('.detail h2')?.textContent === 'x1', 'detail');
  const meta = Array.from(h.document.querySelectorAll('.detail .meta dt')).map((dt) => [
    dt.textContent,
    dt.nextElementSibling!.textContent,
  ]);
  assert.deepEqual(
    meta.find(([k]) => k === 'used in training'),
    ['used in training', 'used by the trainer 19 times'],
  );
  await app.select('x2');
  await until(() => h.document.querySelector('.detail h2')?.textContent === 'x2', 'detail of x2');
  assert.match(h.document.querySelector('.detail .meta')!.textContent!, /not used by the trainer yet/);
  assert.equal(h.document.querySelector('.detail .task-meta'), null, 'no task metadata: no section');
  await h.close();
});

test("the task's own columns (its metadata) in the detail (issue 40 item 1)", async () => {
  const e: Experience = exp(1);
  const h = host<BrowserRequests>({
    ...handlers(),
    list: () => ({ total: 1, rows: [summary(e)] }),
    get: () => ({ ...e, taskMetadata: { difficulty: 'easy', tags: ['a', 'b'] } }),
  });
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await app.firstPaint;
  await app.select(e.id);
  await until(() => h.document.querySelector('.detail .task-meta'), 'task metadata');
  const pairs = Array.from(h.document.querySelectorAll('.detail .task-meta dt')).map((dt) => [
    dt.textContent,
    dt.nextElementSibling!.textContent,
  ]);
  assert.deepEqual(pairs, [
    ['difficulty', 'easy'],
    ['tags', '["a","b"]'],
  ]);
  await h.close();
});

test('search matches are marked in the list and the prompt', async () => {
  const h = host<BrowserRequests>(handlers());
  const app = mountBrowser(h.root, h.ipc as never, { filter: { text: 'resp 99' } } as never);
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await app.firstPaint;
  await until(() => h.document.querySelector('.vlist-row[data-id="e99"]'), 'matching row');
  const marks = Array.from(h.document.querySelectorAll('.vlist-row[data-id="e990"] .resp mark')).map(
    (m) => m.textContent,
  );
  assert.deepEqual(marks, ['resp 99']);
  assert.equal(
    h.document.querySelector('.vlist-row[data-id="e990"] .resp')!.textContent,
    'resp 990',
    'the text itself unchanged',
  );
  const { markMatches } = await import('../../webview/experience-browser/highlight.js');
  const nodes = markMatches(h.document, 'Prompt about PROMPTS', 'prompt');
  assert.deepEqual(
    nodes.map((n) => `${n.nodeName}:${n.textContent}`),
    ['MARK:Prompt', '#text: about ', 'MARK:PROMPT', '#text:S'],
  );
  await h.close();
});

test('keys: p promotes, r rejects, 3 rates; Reject is disabled on a rejected row; failures say "Promote failed"', async () => {
  const log: { method: string; params: unknown }[] = [];
  const rejected: Experience = { ...exp(7), feedback: { rejected: true, by: 'u', at: 1 } };
  const base = handlers(log);
  let failPromote = false;
  const h = host<BrowserRequests>({
    ...base,
    get: (p: { id: string }) => (p.id === 'e7' ? rejected : base.get(p)),
    promote: (p: unknown) => {
      if (failPromote) throw new Error('no tokenizer for run r');
      return base.promote(p);
    },
  });
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await app.firstPaint;
  const list = h.document.querySelector('[role="listbox"]')!;
  const key = (k: string, on: Element = list) =>
    on.dispatchEvent(
      new (h.window as unknown as typeof globalThis).KeyboardEvent('keydown', { key: k, bubbles: true }),
    );
  await app.select('e5');
  await until(() => h.document.getElementById('promote'), 'actions');
  key('3');
  await until(() => log.some((l) => l.method === 'rate'), 'rated by key');
  assert.deepEqual(log.at(-1), { method: 'rate', params: { id: 'e5', rating: 3 } });
  await until(
    () => h.document.querySelector('.detail h2')?.textContent === 'e5' && h.document.getElementById('reject'),
    'detail again',
  );
  key('r');
  await until(() => log.some((l) => l.method === 'reject'), 'rejected by key');
  await until(
    () => h.document.getElementById('promote') && !h.document.getElementById('promote')!.hasAttribute('disabled'),
    'detail again',
  );
  key('p');
  await until(() => log.some((l) => l.method === 'promote'), 'promoted by key');
  // Typing in the search field is no shortcut.
  const n = log.length;
  key('p', h.document.getElementById('f-text')!);
  await tick(20);
  assert.equal(log.length, n);

  await app.select('e7');
  await until(() => h.document.querySelector('.detail h2')?.textContent === 'e7', 'rejected row');
  assert.ok(h.document.getElementById('reject')!.hasAttribute('disabled'));
  assert.match(h.document.getElementById('reject')!.getAttribute('title')!, /already rejected/);
  key('r');
  click(h.document.getElementById('reject'));
  await tick(20);
  assert.equal(log.filter((l) => l.method === 'reject').length, 1, 'no second reject');

  failPromote = true;
  await app.select('e8');
  await until(
    () => h.document.querySelector('.detail h2')?.textContent === 'e8' && h.document.getElementById('promote'),
    'e8',
  );
  click(h.document.getElementById('promote'));
  await until(() => /failed/.test(h.document.querySelector('.message')!.textContent!), 'failure shown');
  assert.equal(h.document.querySelector('.message')!.textContent, 'Promote failed: no tokenizer for run r');
  assert.match(h.document.querySelector('.hint')!.textContent!, /p promote .* r reject .* 1-5 rate/);
  await h.close();
});

test('keys: e puts the keyboard in the edit box; Escape cancels the edit (text restored) and gives it back to the list', async () => {
  const log: { method: string; params: unknown }[] = [];
  const h = host<BrowserRequests>(handlers(log));
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await app.firstPaint;
  const list = h.document.querySelector('[role="listbox"]') as HTMLElement;
  const key = (k: string, on: Element) =>
    on.dispatchEvent(
      new (h.window as unknown as typeof globalThis).KeyboardEvent('keydown', { key: k, bubbles: true }),
    );
  await app.select('e5');
  await until(() => h.document.getElementById('edit-promote'), 'actions');
  list.focus();
  key('e', list);
  const area = h.document.getElementById('edit-text')!;
  assert.equal((area.parentElement as HTMLElement).hidden, false, 'the edit box is open');
  assert.equal(h.document.activeElement, area, 'the keyboard is in the edit box');
  (area as unknown as { value: string }).value = 'half an edit';
  // Keys typed in the box are text, not shortcuts; Escape drops the edit.
  key('p', area);
  key('Escape', area);
  const after = h.document.getElementById('edit-text')!;
  assert.equal((after.parentElement as HTMLElement).hidden, true, 'the edit box is closed');
  assert.equal((after as unknown as { value: string }).value, 'resp 5', 'the edit is dropped');
  assert.equal(h.document.activeElement, list, 'the keyboard is back in the list');
  // Opened again, it starts from the response (a fresh box: vscode-textarea keeps typed text otherwise).
  key('e', list);
  const again = h.document.getElementById('edit-text')!;
  assert.notEqual(again, area);
  assert.equal((again as unknown as { value: string }).value, 'resp 5');
  assert.equal(h.document.activeElement, again);
  await tick(20);
  assert.deepEqual(log, [], 'nothing was promoted');
  await h.close();
});

test("a run-id filter that finds nothing here shows the host's hint (the run's rows are in another buffer)", async () => {
  const base = handlers();
  const hint = 'Run math-tiny (run-1) keeps its experiences in its own buffer, /w/run-1.db';
  const h = host<BrowserRequests>({
    ...base,
    list: (p: BrowserRequests['list']['params']) => (p.filter.runId ? { total: 0, rows: [], hint } : base.list(p)),
  });
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await app.firstPaint;
  h.notify('setFilter', { filter: { runId: 'run-1' } });
  await until(() => h.document.querySelector('.count')!.textContent === '0 experiences', 'empty');
  assert.equal(h.document.querySelector('.message')!.textContent, hint);
  await h.close();
});
