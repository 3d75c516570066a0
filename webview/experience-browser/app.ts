// The experience browser, composed: the state store (store.ts, typed actions), the filter bar and
// bulk bar (toolbars.ts, filter-input.ts), the virtualised list (list-pane.ts), curation and undo
// (curation.ts), the detail pane (detail-view.ts: per-token colouring, the GRPO group side by side,
// promote, edit + promote, reject, rate) and the served episodes (served.ts); the host's
// notifications are applied here.
import type { BufferCounts, ExperienceDetail, ExperienceSummary } from '../../backend/core/protocol.js';
import type { WebviewIpc } from '../shared/ipc.js';
import { h } from '../shared/dom.js';
import { inputsOf } from './filters.js';
import type { BrowserNotifications, BrowserRequests, BrowserState } from './protocol.js';
import type { UndoStack } from './undo-stack.js';
import { SHORTCUTS, typing } from './shortcuts.js';
import type { VirtualList } from './virtual-list.js';
import { renderDetail, type DetailContext } from './detail-view.js';
import { bulkBar, filterBar } from './toolbars.js';
import { showServed } from './served.js';
import { BrowserStore } from './store.js';
import { listColumn, mountList } from './list-pane.js';
import { mountCuration } from './curation.js';
import { mountFilterInput } from './filter-input.js';

export { DEFAULT_STATE } from './store.js';
export { middleEllipsis } from './list-pane.js';

export interface BrowserApp {
  list: VirtualList<ExperienceSummary>;
  state: BrowserState;
  undo: UndoStack;
  select(id: string): Promise<void>;
  reload(): void;
  /** Resolves when the first page is drawn (first paint with data). */
  firstPaint: Promise<void>;
  message(text: string, isError?: boolean): void;
}

type Ipc = WebviewIpc<BrowserRequests, BrowserNotifications>;

export function mountBrowser(root: HTMLElement, ipc: Ipc, saved: BrowserState | undefined): BrowserApp {
  const doc = root.ownerDocument;
  const store = new BrowserStore(saved, (s) => ipc.api.setState(s));
  const { state } = store;
  let firstPaintResolve!: () => void;
  const firstPaint = new Promise<void>((r) => (firstPaintResolve = r));

  const { bar, hideRejected, count, counts } = filterBar(doc, state, inputsOf(state.filter), () => {
    store.save();
    pane.reload();
  });
  const bulk = bulkBar(doc);
  const { column, viewport } = listColumn(doc);
  const shown = detailColumn(doc, ipc, state, (text, isError) => message(text, isError));
  const { detail } = shown;
  // Until a row is picked the detail is empty: the list (and its response column) takes the width.
  const main = h(doc, 'div', { class: 'main no-detail' }, column, detail);
  root.append(bar, bulk.bulk, bulk.confirmRow, main);
  bar.append(
    servedButton(doc, () => {
      main.classList.remove('no-detail');
      shown.served();
    }),
  );
  const message = (text: string, isError = false) => {
    bulk.msg.textContent = text;
    bulk.msg.className = `message${isError ? ' error' : ''}`;
  };
  const select = (id: string) => app.select(id);
  const pane = mountList({ viewport, ipc, store, count, message, select, onFirstRow: () => firstPaintResolve() });
  bindShortcuts(root);
  const setFilter = mountFilterInput({ doc, store, bar, hideRejected, viewport, message, reload: pane.reload });
  const { act, hideConfirm } = mountCuration({ doc, ipc, store, bar: bulk, message, reload: pane.reload, select });
  const detailCtx: DetailContext = {
    doc,
    detail,
    state,
    save: () => store.save(),
    ipc,
    act,
    message,
    promotedHere: store.promotedHere,
    select,
    focusList: () => viewport.focus(),
  };

  const app: BrowserApp = {
    list: pane.list,
    state,
    get undo() {
      return store.undo;
    },
    firstPaint,
    message,
    reload: pane.reload,
    async select(id) {
      store.dispatch({ type: 'selected', id });
      main.classList.remove('no-detail');
      pane.list.render();
      await shown.show(id, detailCtx);
    },
  };

  ipc.on('bufferChanged', (c) => {
    showCounts(counts, c.counts);
    if (store.shows(c.path)) return pane.refreshRows();
    store.dispatch({ type: 'bufferShown', path: c.path });
    hideConfirm();
    message('');
    pane.reload();
  });
  ipc.on('setFilter', ({ filter }) => setFilter(filter));
  showCounts(counts, undefined);
  viewport.scrollTop = state.scrollTop;
  if (state.selectedId) void app.select(state.selectedId);
  return app;
}

/** The detail column: the experience asked for last (an answer that comes after a later pick is dropped), or the served episodes. */
function detailColumn(
  doc: Document,
  ipc: Ipc,
  state: BrowserState,
  message: (text: string, isError?: boolean) => void,
) {
  const detail = h(doc, 'div', { class: 'detail' });
  let current: ExperienceDetail | undefined;
  return {
    detail,
    async show(id: string, ctx: DetailContext): Promise<void> {
      try {
        const e = await ipc.request('get', { id });
        if (!e) {
          detail.replaceChildren(h(doc, 'p', { text: `${id} is no longer in the buffer` }));
          return;
        }
        current = e;
        const group = state.view === 'group' ? await ipc.request('group', { groupId: e.groupId }) : undefined;
        if (current === e) renderDetail(ctx, e, group);
      } catch (err) {
        message((err as Error).message, true);
      }
    },
    served(): void {
      current = undefined;
      showServed(doc, ipc, detail).catch((e: Error) => message(e.message, true));
    },
  };
}

/** Mode serve: the episodes serve runs wait to be rewarded for (not in the buffer until rewarded). */
function servedButton(doc: Document, onClick: () => void): HTMLElement {
  const b = h(doc, 'vscode-button', {
    id: 'served-episodes',
    secondary: true,
    icon: 'server',
    text: 'Served episodes',
    title: 'episodes of running serve runs that wait for a reward: open one, rate it',
  });
  b.addEventListener('click', onClick);
  return b;
}

/** One-key curation (p promote, x reject, 1-5 rate, ...): presses the detail's button, so disabled stays disabled. */
function bindShortcuts(root: HTMLElement): void {
  root.addEventListener('keydown', (ev) => {
    const k = ev as KeyboardEvent;
    if (k.ctrlKey || k.metaKey || k.altKey || typing(k.target)) return;
    const sc = SHORTCUTS[k.key];
    const el = sc && (root.querySelector(sc.button) as HTMLElement | null);
    if (!el) return;
    ev.preventDefault();
    if (k.key === '/') el.focus();
    else if (!el.hasAttribute('disabled')) el.click();
  });
}

function showCounts(counts: HTMLElement, c: BufferCounts | undefined): void {
  counts.textContent = c
    ? `${c.usual.toLocaleString('en-US')} usual · ${c.expert.toLocaleString('en-US')} expert`
    : 'no buffer open';
}
