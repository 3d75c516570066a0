// The virtualised list keeps the DOM small for 100,000 rows and fetches only the pages in view.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PageCache, VirtualList, visibleRange } from '../../webview/experience-browser/virtual-list.js';
import { host, until } from './dom.js';

test('visibleRange: rows in view plus overscan, clamped to the list', () => {
  assert.deepEqual(visibleRange(0, 260, 26, 100_000, 5), { start: 0, end: 16 });
  assert.deepEqual(visibleRange(26 * 50_000, 260, 26, 100_000, 5), { start: 49_995, end: 50_016 });
  assert.deepEqual(visibleRange(26 * 99_999, 260, 26, 100_000, 5), { start: 99_994, end: 100_000 });
  assert.deepEqual(visibleRange(0, 260, 26, 0), { start: 0, end: 0 });
});

test('PageCache fetches each page once and drops answers to a query that was reset', async () => {
  const fetched: number[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const cache = new PageCache<number>(async (offset, limit) => {
    fetched.push(offset);
    if (offset === 400) await gate;
    return { total: 1000, rows: Array.from({ length: Math.min(limit, 1000 - offset) }, (_, i) => offset + i) };
  }, 200);
  assert.equal(cache.get(5), undefined);
  assert.equal(cache.get(150), undefined);
  await cache.load(0);
  assert.deepEqual(fetched, [0]);
  assert.equal(cache.get(150), 150);
  cache.get(450); // page 2 in flight...
  cache.reset(async (offset) => ({ total: 3, rows: [offset + 1000, offset + 1001, offset + 1002] }));
  release();
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(cache.loadedPages, 0, 'the stale page 2 answer was dropped');
  await cache.load(0);
  assert.equal(cache.total, 3);
  assert.equal(cache.get(1), 1001);
});

test('100,000 rows: a bounded number of row elements, and only the pages in view are requested', async () => {
  const h = host({});
  const total = 100_000;
  const offsets: number[] = [];
  const cache = new PageCache<string>(async (offset, limit) => {
    offsets.push(offset);
    return { total, rows: Array.from({ length: limit }, (_, i) => `row ${offset + i}`) };
  }, 200);
  const viewport = h.document.createElement('div');
  h.root.append(viewport);
  Object.defineProperty(viewport, 'clientHeight', { value: 520 });
  const list = new VirtualList<string>(viewport, cache, {
    rowHeight: 26,
    overscan: 8,
    renderRow: (el, row) => void (el.textContent = row ?? '…'),
  });
  await cache.load(0);
  // At most the rows in view (520 / 26 + 1) plus the overscan on both sides.
  const bound = 520 / 26 + 1 + 2 * 8;
  const n = list.render();
  assert.ok(n <= bound, `rendered ${n} rows`);
  assert.equal(list.spacer.style.height, `${total * 26}px`);
  assert.equal(viewport.querySelectorAll('.vlist-row').length, n);
  assert.equal(viewport.querySelector('.vlist-row')!.textContent, 'row 0');

  viewport.scrollTop = 26 * 50_000;
  list.render(); // placeholders first, then the page arrives
  await until(() => offsets.includes(50_000 - (50_000 % 200)) && cache.loadedPages >= 2, 'page at 50,000');
  list.render();
  const rows = Array.from(viewport.querySelectorAll('.vlist-row')).filter(
    (r) => !(r as HTMLElement).hidden,
  ) as HTMLElement[];
  assert.ok(rows.length <= bound, `rendered ${rows.length} rows`);
  assert.ok(rows.some((r) => r.textContent === 'row 50000'));
  const first = rows.find((r) => r.dataset.index === '50000')!;
  assert.equal(first.style.transform, `translateY(${50_000 * 26}px)`);
  // Pages touched: the first, and those around row 50,000 (the overscan may touch the previous one).
  assert.ok(offsets.length <= 3, `fetched ${JSON.stringify(offsets)}`);
  assert.ok(viewport.querySelectorAll('.vlist-row').length <= bound, 'row elements are reused, not added per row');
  await h.close();
});

test('refresh (a run appended rows): the drawn rows and the scroll position stay until the fresh pages answer; pages out of view are dropped', async () => {
  const h = host({});
  let total = 1000;
  let shift = 0; // rows appended at the top (newest first)
  let release: (() => void) | undefined;
  const cache = new PageCache<string>(async (offset, limit) => {
    if (release === undefined) {
      /* answer at once */
    } else await new Promise<void>((r) => (release = r));
    return {
      total,
      rows: Array.from({ length: Math.min(limit, total - offset) }, (_, i) => `row ${offset + i - shift}`),
    };
  }, 200);
  const viewport = h.document.createElement('div');
  h.root.append(viewport);
  Object.defineProperty(viewport, 'clientHeight', { value: 260 });
  const list = new VirtualList<string>(viewport, cache, {
    rowHeight: 26,
    overscan: 2,
    renderRow: (el, row) => void (el.textContent = row ?? '…'),
  });
  await cache.load(0);
  await cache.load(2);
  viewport.scrollTop = 26 * 450;
  list.render();
  assert.deepEqual(list.visiblePages(), [2]);
  const before = viewport.querySelector('.vlist-row')!.textContent;
  // 10 new rows arrive; the answer is held back: nothing blanks meanwhile.
  total = 1010;
  shift = 10;
  release = () => undefined;
  const done = cache.refresh(list.visiblePages());
  list.render();
  assert.equal(
    viewport.querySelector('.vlist-row')!.textContent,
    before,
    'the old rows stay drawn while the fresh page loads',
  );
  assert.equal(viewport.scrollTop, 26 * 450, 'the scroll position is kept');
  assert.equal(cache.total, 1000);
  release();
  await done;
  list.render();
  assert.equal(cache.total, 1010);
  assert.equal(cache.loadedPages, 1, 'page 0 (out of view) was dropped: its rows moved');
  assert.equal(viewport.querySelector('.vlist-row')!.textContent, `row ${448 - 10}`, 'the fresh rows are drawn');
});
