// The experience browser's list column: the column heads, the virtualised list of experiences (one
// row each: source, reward, task, version, an expert's use count, the response with search matches
// marked), the keys hint, and the listbox's behaviour (click or arrow keys select, scrolling is kept).
import type { ExperienceSummary } from '../../backend/core/protocol.js';
import { h } from '../shared/dom.js';
import type { WebviewIpc } from '../shared/ipc.js';
import { usedTitle } from './detail-view.js';
import { markMatches } from './highlight.js';
import type { BrowserNotifications, BrowserRequests, BrowserState } from './protocol.js';
import { SHORTCUT_HINT } from './shortcuts.js';
import type { BrowserStore } from './store.js';
import { PageCache, VirtualList } from './virtual-list.js';

const ROW_HEIGHT = 26;

/** An id shortened in the middle, so both its start and its distinguishing end stay readable. */
export function middleEllipsis(s: string, max = 16): string {
  if (s.length <= max) return s;
  const tail = Math.ceil((max - 1) / 2);
  return `${s.slice(0, max - 1 - tail)}…${s.slice(-tail)}`;
}

/** The column's elements, made before the list is mounted in them. */
export function listColumn(doc: Document): { column: HTMLElement; viewport: HTMLElement } {
  const viewport = h(doc, 'div', { class: 'list', tabindex: '0', role: 'listbox', 'aria-label': 'experiences' });
  const head = h(
    doc,
    'div',
    { class: 'list-head', 'aria-hidden': 'true' },
    h(doc, 'span', { class: 'src' }),
    h(doc, 'span', { class: 'reward', text: 'reward' }),
    h(doc, 'span', { class: 'task', text: 'task' }),
    h(doc, 'span', { class: 'ver', text: 'ver' }),
    h(doc, 'span', { class: 'uses', text: 'used', title: 'how many times the trainer used an expert' }),
    h(doc, 'span', { class: 'resp', text: 'response' }),
  );
  const hint = h(doc, 'div', { class: 'hint', text: SHORTCUT_HINT });
  return { column: h(doc, 'div', { class: 'list-col' }, head, viewport, hint), viewport };
}

export interface ListDeps {
  viewport: HTMLElement;
  ipc: WebviewIpc<BrowserRequests, BrowserNotifications>;
  store: BrowserStore;
  /** The filter bar's "N experiences". */
  count: HTMLElement;
  message(text: string, isError?: boolean): void;
  select(id: string): Promise<void>;
  /** The first row is drawn (first paint with data). */
  onFirstRow(): void;
}

export interface ListPane {
  list: VirtualList<ExperienceSummary>;
  /** Another query (filter, sort, buffer): from the first page. */
  reload(): void;
  /** New rows for the same query (a run appending): keep the drawn rows and the scroll position. */
  refreshRows(): void;
}

export function mountList(d: ListDeps): ListPane {
  const { viewport, store, message } = d;
  const doc = viewport.ownerDocument;
  /** The host's word on an empty answer (a run whose experiences are in another buffer). */
  let emptyHint: string | undefined;
  const cache = new PageCache<ExperienceSummary>((offset, limit) => {
    const { filter, sort, descending } = store.state;
    return d.ipc.request('list', { filter, sort, descending, offset, limit }).then((r) => ((emptyHint = r.hint), r));
  });
  cache.onError = (e) => message(e.message, true);
  const list = new VirtualList<ExperienceSummary>(viewport, cache, {
    rowHeight: ROW_HEIGHT,
    renderRow(el, row, i) {
      renderRow(doc, store.state, el, row);
      if (row && i === 0) d.onFirstRow();
    },
  });
  viewport.addEventListener('click', (ev) => {
    const row = (ev.target as HTMLElement).closest('.vlist-row') as HTMLElement | null;
    if (row?.dataset.id) {
      message('');
      void d.select(row.dataset.id);
    }
  });
  // A listbox moves its selection with the arrow keys (and Home / End / PageUp / PageDown).
  viewport.addEventListener('keydown', (ev) => {
    const step = STEPS[(ev as KeyboardEvent).key];
    if (step === undefined || cache.total === 0) return;
    ev.preventDefault();
    const cur = viewport.querySelector('.vlist-row.selected') as HTMLElement | null;
    const from = cur?.dataset.index !== undefined ? Number(cur.dataset.index) : -1;
    const to = Math.max(0, Math.min(cache.total - 1, from === -1 && step > 0 ? 0 : from + step));
    void selectIndex(to);
  });
  async function selectIndex(i: number): Promise<void> {
    const view = viewport.clientHeight || 600;
    if (i * ROW_HEIGHT < viewport.scrollTop) viewport.scrollTop = i * ROW_HEIGHT;
    else if ((i + 1) * ROW_HEIGHT > viewport.scrollTop + view) viewport.scrollTop = (i + 1) * ROW_HEIGHT - view;
    let row = cache.get(i);
    if (!row) {
      await cache.load(Math.floor(i / cache.pageSize));
      row = cache.get(i);
    }
    if (row) {
      message('');
      await d.select(row.id);
    }
  }
  viewport.addEventListener('scroll', () => store.dispatch({ type: 'scrolled', top: viewport.scrollTop }));
  const showCount = () =>
    (d.count.textContent = `${cache.total.toLocaleString('en-US')} experience${cache.total === 1 ? '' : 's'}`);
  return {
    list,
    reload() {
      cache.reset();
      list.render();
      void cache.load(0).then(() => {
        showCount();
        if (cache.total === 0 && emptyHint) message(emptyHint);
        list.render();
      });
    },
    refreshRows() {
      void cache.refresh(list.visiblePages()).then(() => {
        showCount();
        list.render();
      });
    },
  };
}

const STEPS: Record<string, number> = {
  ArrowDown: 1,
  ArrowUp: -1,
  PageDown: 10,
  PageUp: -10,
  Home: -Infinity,
  End: Infinity,
};

function renderRow(doc: Document, state: BrowserState, el: HTMLElement, row: ExperienceSummary | undefined): void {
  if (!row) {
    el.textContent = '…';
    el.className = 'vlist-row loading';
    el.removeAttribute('data-id');
    return;
  }
  el.className = `vlist-row${row.id === state.selectedId ? ' selected' : ''}${row.feedback?.rejected ? ' rejected' : ''}`;
  el.dataset.id = row.id;
  el.setAttribute('role', 'option');
  el.setAttribute('aria-selected', String(row.id === state.selectedId));
  el.replaceChildren(
    h(doc, 'span', {
      class: `codicon codicon-${row.source === 'expert' ? 'star-full' : row.status === 'ok' ? 'circle-filled' : 'warning'} src-${row.source} st-${row.status}`,
      title: `${row.source} · ${row.status}`,
    }),
    h(doc, 'span', { class: 'reward', text: row.reward.toFixed(2) }),
    h(doc, 'span', { class: 'task', text: middleEllipsis(row.taskId), title: row.taskId }),
    h(doc, 'span', { class: 'ver', text: row.modelVersion === -1 ? 'human' : `v${row.modelVersion}` }),
    // An expert's use count: curation seen at work (the trainer took it into this many batches).
    h(
      doc,
      'span',
      row.source === 'expert'
        ? { class: 'uses', text: `${row.useCount ?? 0}×`, title: usedTitle(row.useCount ?? 0) }
        : { class: 'uses' },
    ),
    h(doc, 'span', { class: 'resp' }, ...markMatches(doc, row.responsePreview.replace(/\s+/g, ' '), state.filter.text)),
  );
}
