// The experience browser: filter bar, virtualised list, bulk curation (top-k per task, undo) and the
// detail pane (detail-view.ts: per-token colouring, the GRPO group side by side, promote, edit +
// promote, reject, rate).
import type { BufferCounts, ExperienceDetail, ExperienceSummary } from '../../backend/core/protocol.js';
import type { WebviewIpc } from '../shared/ipc.js';
import { checked, h, setValue, fieldValue } from '../shared/dom.js';
import { EMPTY_INPUTS, inputsOf, parseFilter, type FilterInputs } from './filters.js';
import type { BrowserNotifications, BrowserRequests, BrowserState } from './protocol.js';
import { UndoStack } from './undo-stack.js';
import { markMatches } from './highlight.js';
import { SHORTCUTS, SHORTCUT_HINT, failedVerb, typing } from './shortcuts.js';
import { PageCache, VirtualList } from './virtual-list.js';
import { renderDetail, usedTitle, type DetailContext } from './detail-view.js';
import { bulkBar, FIELDS, filterBar } from './toolbars.js';
import { showServed } from './served.js';

export const ROW_HEIGHT = 26;

export const DEFAULT_STATE: BrowserState = {
  filter: {},
  sort: 'createdAt',
  descending: true,
  scrollTop: 0,
  colourBy: 'logprob',
  view: 'detail',
};

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

/** An id shortened in the middle, so both its start and its distinguishing end stay readable. */
export function middleEllipsis(s: string, max = 16): string {
  if (s.length <= max) return s;
  const tail = Math.ceil((max - 1) / 2);
  return `${s.slice(0, max - 1 - tail)}…${s.slice(-tail)}`;
}

export function mountBrowser(root: HTMLElement, ipc: Ipc, saved: BrowserState | undefined): BrowserApp {
  const doc = root.ownerDocument;
  const state: BrowserState = { ...DEFAULT_STATE, ...(saved ?? {}) };
  // One undo stack per buffer: Undo never reverts a change made in the buffer shown before.
  const undoByBuffer = new Map<string, UndoStack>();
  let bufferKey = '';
  const undoFor = (): UndoStack => {
    let u = undoByBuffer.get(bufferKey);
    if (!u) undoByBuffer.set(bufferKey, (u = new UndoStack()));
    return u;
  };
  /** Experiences promoted in this session (id -> expert id): their Promote stays disabled until undone. */
  const promotedHere = new Map<string, string>();
  const save = () => ipc.api.setState(state);
  let current: ExperienceDetail | undefined;
  let firstPaintResolve!: () => void;
  const firstPaint = new Promise<void>((r) => (firstPaintResolve = r));

  // ---------------------------------------------------------------- toolbars (toolbars.ts)
  const inputs = inputsOf(state.filter);
  const { bar, hideRejected, count, counts } = filterBar(doc, state, inputs, () => {
    save();
    reload();
  });
  const { bulk, topK, minReward, bulkBtn, undoBtn, msg, confirmRow } = bulkBar(doc);

  // ---------------------------------------------------------------- list + detail
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
  const detail = h(doc, 'div', { class: 'detail' });
  const hint = h(doc, 'div', { class: 'hint', text: SHORTCUT_HINT });
  // Until a row is picked the detail is empty: the list (and its response column) takes the width.
  const main = h(
    doc,
    'div',
    { class: 'main no-detail' },
    h(doc, 'div', { class: 'list-col' }, head, viewport, hint),
    detail,
  );
  root.append(bar, bulk, confirmRow, main);
  // Mode serve: the episodes serve runs wait to be rewarded for (not in the buffer until rewarded).
  const servedBtn = h(doc, 'vscode-button', {
    id: 'served-episodes',
    secondary: true,
    icon: 'server',
    text: 'Served episodes',
    title: 'episodes of running serve runs that wait for a reward: open one, rate it',
  });
  bar.append(servedBtn);
  servedBtn.addEventListener('click', () => {
    main.classList.remove('no-detail');
    current = undefined;
    showServed(doc, ipc, detail).catch((e: Error) => message(e.message, true));
  });

  /** The host's word on an empty answer (a run whose experiences are in another buffer). */
  let emptyHint: string | undefined;
  const cache = new PageCache<ExperienceSummary>((offset, limit) =>
    ipc
      .request('list', { filter: state.filter, sort: state.sort, descending: state.descending, offset, limit })
      .then((r) => ((emptyHint = r.hint), r)),
  );
  cache.onError = (e) => message(e.message, true);
  const list = new VirtualList<ExperienceSummary>(viewport, cache, {
    rowHeight: ROW_HEIGHT,
    renderRow(el, row, i) {
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
        h(
          doc,
          'span',
          { class: 'resp' },
          ...markMatches(doc, row.responsePreview.replace(/\s+/g, ' '), state.filter.text),
        ),
      );
      if (i === 0) firstPaintResolve();
    },
  });
  viewport.addEventListener('click', (ev) => {
    const row = (ev.target as HTMLElement).closest('.vlist-row') as HTMLElement | null;
    if (row?.dataset.id) {
      message('');
      void app.select(row.dataset.id);
    }
  });
  // One-key curation (p promote, x reject, 1-5 rate, ...): presses the detail's button, so disabled stays disabled.
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
  // A listbox moves its selection with the arrow keys (and Home / End / PageUp / PageDown).
  viewport.addEventListener('keydown', (ev) => {
    const step: Record<string, number> = {
      ArrowDown: 1,
      ArrowUp: -1,
      PageDown: 10,
      PageUp: -10,
      Home: -Infinity,
      End: Infinity,
    };
    const d = step[(ev as KeyboardEvent).key];
    if (d === undefined || cache.total === 0) return;
    ev.preventDefault();
    const cur = viewport.querySelector('.vlist-row.selected') as HTMLElement | null;
    const from = cur?.dataset.index !== undefined ? Number(cur.dataset.index) : -1;
    const to = Math.max(0, Math.min(cache.total - 1, from === -1 && d > 0 ? 0 : from + d));
    void selectIndex(to);
  });
  async function selectIndex(i: number): Promise<void> {
    const h0 = ROW_HEIGHT;
    const view = viewport.clientHeight || 600;
    if (i * h0 < viewport.scrollTop) viewport.scrollTop = i * h0;
    else if ((i + 1) * h0 > viewport.scrollTop + view) viewport.scrollTop = (i + 1) * h0 - view;
    let row = cache.get(i);
    if (!row) {
      await cache.load(Math.floor(i / cache.pageSize));
      row = cache.get(i);
    }
    if (row) {
      message('');
      await app.select(row.id);
    }
  }
  let scrollSave = 0;
  viewport.addEventListener('scroll', () => {
    state.scrollTop = viewport.scrollTop;
    clearTimeout(scrollSave);
    scrollSave = setTimeout(save, 200) as unknown as number;
  });

  function message(text: string, isError = false): void {
    msg.textContent = text;
    msg.className = `message${isError ? ' error' : ''}`;
  }

  function showCounts(c: BufferCounts | undefined): void {
    counts.textContent = c
      ? `${c.usual.toLocaleString('en-US')} usual · ${c.expert.toLocaleString('en-US')} expert`
      : 'no buffer open';
  }

  function reload(): void {
    cache.reset();
    list.render();
    void cache.load(0).then(() => {
      count.textContent = `${cache.total.toLocaleString('en-US')} experience${cache.total === 1 ? '' : 's'}`;
      if (cache.total === 0 && emptyHint) message(emptyHint);
      list.render();
    });
  }

  /** New rows for the same query (a run appending): keep the drawn rows and the scroll position. */
  function refreshRows(): void {
    void cache.refresh(list.visiblePages()).then(() => {
      count.textContent = `${cache.total.toLocaleString('en-US')} experience${cache.total === 1 ? '' : 's'}`;
      list.render();
    });
  }

  function applyFilter(): void {
    const raw: FilterInputs = { ...EMPTY_INPUTS };
    for (const f of FIELDS)
      (raw as unknown as Record<string, string>)[f.key] = fieldValue(doc.getElementById(`f-${f.key}`));
    raw.source = fieldValue(doc.getElementById('f-source'));
    raw.status = fieldValue(doc.getElementById('f-status'));
    raw.hideRejected = checked(hideRejected);
    const { filter, errors } = parseFilter(raw);
    for (const f of [...FIELDS.map((x) => x.key)])
      doc.getElementById(`f-${f}`)?.toggleAttribute('invalid', !!errors[f]);
    const bad = Object.values(errors);
    if (bad.length) {
      message(bad.join('; '), true);
      return;
    }
    message('');
    state.filter = filter;
    state.sort = (fieldValue(doc.getElementById('f-sort')) as BrowserState['sort']) || 'createdAt';
    state.scrollTop = 0;
    viewport.scrollTop = 0;
    save();
    reload();
  }
  let filterTimer = 0;
  const onFilterInput = () => {
    message('');
    clearTimeout(filterTimer);
    filterTimer = setTimeout(applyFilter, 250) as unknown as number;
  };
  bar.addEventListener('input', onFilterInput);
  bar.addEventListener('change', onFilterInput);
  bulk.addEventListener('input', () => hideConfirm());

  // ---------------------------------------------------------------- curation
  async function act<R extends { changeId: string } | { undone: unknown }>(
    what: string | ((r: R) => string),
    run: () => Promise<R>,
  ): Promise<void> {
    try {
      const r = await run();
      if ('changeId' in r) undoFor().push(r as never);
      message(typeof what === 'function' ? what(r) : what);
      reload();
      if (state.selectedId) await app.select(state.selectedId);
    } catch (err) {
      message(`${failedVerb(typeof what === 'string' ? what : 'Change')} failed: ${(err as Error).message}`, true);
    }
  }
  function hideConfirm(): void {
    confirmRow.hidden = true;
    confirmRow.replaceChildren();
  }
  bulkBtn.addEventListener('click', () => void previewBulk());
  async function previewBulk(): Promise<void> {
    hideConfirm();
    const k = Number(fieldValue(topK));
    if (!Number.isInteger(k) || k < 1) {
      message('k must be a whole number ≥ 1', true);
      return;
    }
    const rawMin = fieldValue(minReward).trim();
    const min = rawMin === '' ? undefined : Number(rawMin);
    if (min !== undefined && !Number.isFinite(min)) {
      message(`minimum reward '${rawMin}' is not a number`, true);
      return;
    }
    // The threshold narrows the current filter, never widens it.
    const lo = Math.max(min ?? -Infinity, state.filter.minReward ?? -Infinity);
    const filter = { ...state.filter, ...(Number.isFinite(lo) ? { minReward: lo } : {}) };
    let p;
    try {
      p = await ipc.request('bulkPreview', { topK: k, filter });
    } catch (err) {
      message(`Preview failed: ${(err as Error).message}`, true);
      return;
    }
    const what = `top ${k} per task${Number.isFinite(lo) ? `, reward ≥ ${lo}` : ''}`;
    if (p.count === 0) {
      message(`Nothing to promote (${what}): no unpromoted usual experience matches.`);
      return;
    }
    message('');
    const range =
      p.minReward === p.maxReward
        ? `reward ${p.minReward}`
        : `rewards ${p.minReward?.toFixed(2)}–${p.maxReward?.toFixed(2)}`;
    const yes = h(doc, 'vscode-button', { id: 'bulk-confirm', text: `Promote ${p.count}` });
    const no = h(doc, 'vscode-button', { id: 'bulk-cancel', secondary: true, text: 'Cancel' });
    confirmRow.replaceChildren(
      h(doc, 'span', {
        class: 'bulk-preview',
        text: `Promote ${p.count} experience${p.count === 1 ? '' : 's'} from ${p.tasks} task${p.tasks === 1 ? '' : 's'} (${what}; ${range}) to expert?`,
      }),
      yes,
      no,
    );
    confirmRow.hidden = false;
    no.addEventListener('click', () => {
      hideConfirm();
      message('Bulk promotion cancelled.');
    });
    yes.addEventListener('click', () => {
      hideConfirm();
      void act(
        (r: { count?: number }) =>
          `Promoted ${r.count ?? p.count} experience${(r.count ?? p.count) === 1 ? '' : 's'} (${what}). Undo reverts all of them at once.`,
        () => ipc.request('bulkPromote', { topK: k, filter }),
      );
    });
  }
  undoBtn.addEventListener('click', () => {
    const stack = undoFor();
    const last = stack.peek();
    if (!last) {
      message('Nothing to undo in this buffer.');
      return;
    }
    void act(`Undone: ${last.kind}${last.count !== undefined ? ` of ${last.count}` : ''}`, async () => {
      const r = await ipc.request('undo', { changeId: last.changeId });
      if (!r.undone) throw new Error('nothing to undo');
      stack.remove(r.undone.changeId);
      const ids = new Set([...last.experienceIds, ...r.undone.experienceIds]);
      for (const [id, expert] of promotedHere) if (ids.has(id) || ids.has(expert)) promotedHere.delete(id);
      return r;
    });
  });

  const detailCtx: DetailContext = {
    doc,
    detail,
    state,
    save,
    ipc,
    act,
    message,
    promotedHere,
    select: (id) => app.select(id),
    focusList: () => viewport.focus(),
  };

  const app: BrowserApp = {
    list,
    state,
    get undo() {
      return undoFor();
    },
    firstPaint,
    message,
    reload,
    async select(id) {
      state.selectedId = id;
      main.classList.remove('no-detail');
      save();
      list.render();
      try {
        const e = await ipc.request('get', { id });
        if (!e) {
          detail.replaceChildren(h(doc, 'p', { text: `${id} is no longer in the buffer` }));
          return;
        }
        current = e;
        const group = state.view === 'group' ? await ipc.request('group', { groupId: e.groupId }) : undefined;
        if (current === e) renderDetail(detailCtx, e, group);
      } catch (err) {
        message((err as Error).message, true);
      }
    },
  };

  ipc.on('bufferChanged', (c) => {
    showCounts(c.counts);
    if ((c.path ?? '') !== bufferKey) {
      bufferKey = c.path ?? '';
      if (c.path && state.bufferPath !== c.path) {
        state.bufferPath = c.path;
        save();
      }
      promotedHere.clear();
      hideConfirm();
      message('');
      reload();
    } else refreshRows();
  });
  ipc.on('setFilter', ({ filter }) => {
    state.filter = filter;
    const i = inputsOf(filter);
    for (const f of FIELDS) setValue(doc.getElementById(`f-${f.key}`), String(i[f.key]));
    setValue(doc.getElementById('f-source'), i.source);
    setValue(doc.getElementById('f-status'), i.status);
    save();
    reload();
  });
  showCounts(undefined);
  viewport.scrollTop = state.scrollTop;
  if (state.selectedId) void app.select(state.selectedId);
  return app;
}
