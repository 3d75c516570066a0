// Curation requests of the experience browser: each change (from the detail pane or in bulk) is told
// in the message line, pushed on the buffer's undo stack and shown (list and detail redrawn); bulk
// promotion of the top k per task is previewed and confirmed first; Undo reverts the latest change.
import { h, fieldValue } from '../shared/dom.js';
import type { WebviewIpc } from '../shared/ipc.js';
import type { BrowserNotifications, BrowserRequests } from './protocol.js';
import { failedVerb } from './shortcuts.js';
import type { BrowserStore } from './store.js';
import type { bulkBar } from './toolbars.js';

export interface CurationDeps {
  doc: Document;
  ipc: WebviewIpc<BrowserRequests, BrowserNotifications>;
  store: BrowserStore;
  /** The bulk toolbar (toolbars.ts). */
  bar: ReturnType<typeof bulkBar>;
  message(text: string, isError?: boolean): void;
  reload(): void;
  select(id: string): Promise<void>;
}

/** Runs a curation request: its message, the undo entry, the list and the pane redrawn. */
export type Act = <R extends { changeId: string } | { undone: unknown }>(
  what: string | ((r: R) => string),
  run: () => Promise<R>,
) => Promise<void>;

export function mountCuration(d: CurationDeps): { act: Act; hideConfirm(): void } {
  const { store, message } = d;
  const { bulk, bulkBtn, undoBtn, confirmRow } = d.bar;
  const act: Act = async (what, run) => {
    try {
      const r = await run();
      if ('changeId' in r) store.undo.push(r as never);
      message(typeof what === 'function' ? what(r) : what);
      d.reload();
      if (store.state.selectedId) await d.select(store.state.selectedId);
    } catch (err) {
      message(`${failedVerb(typeof what === 'string' ? what : 'Change')} failed: ${(err as Error).message}`, true);
    }
  };
  const hideConfirm = () => {
    confirmRow.hidden = true;
    confirmRow.replaceChildren();
  };
  bulk.addEventListener('input', () => hideConfirm());
  bulkBtn.addEventListener('click', () => void previewBulk(d, act, hideConfirm));
  undoBtn.addEventListener('click', () => {
    const stack = store.undo;
    const last = stack.peek();
    if (!last) {
      message('Nothing to undo in this buffer.');
      return;
    }
    void act(`Undone: ${last.kind}${last.count !== undefined ? ` of ${last.count}` : ''}`, async () => {
      const r = await d.ipc.request('undo', { changeId: last.changeId });
      if (!r.undone) throw new Error('nothing to undo');
      stack.remove(r.undone.changeId);
      store.dispatch({ type: 'undone', experienceIds: [...last.experienceIds, ...r.undone.experienceIds] });
      return r;
    });
  });
  return { act, hideConfirm };
}

/** Top k per task (narrowed by a minimum reward): the count, tasks and rewards it would promote, to confirm. */
async function previewBulk(d: CurationDeps, act: Act, hideConfirm: () => void): Promise<void> {
  const { doc, store, message } = d;
  const { topK, minReward, confirmRow } = d.bar;
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
  const lo = Math.max(min ?? -Infinity, store.state.filter.minReward ?? -Infinity);
  const filter = { ...store.state.filter, ...(Number.isFinite(lo) ? { minReward: lo } : {}) };
  let p;
  try {
    p = await d.ipc.request('bulkPreview', { topK: k, filter });
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
      () => d.ipc.request('bulkPromote', { topK: k, filter }),
    );
  });
}
