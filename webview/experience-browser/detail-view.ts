// The detail pane of the experience browser: one experience's metadata, its curation actions (promote,
// edit then promote, reject, rate, compare with its GRPO group), the prompt, the response coloured per
// token, the reward details and, in group view, the group's samples side by side.
import type { Experience } from '../../backend/core/types.js';
import type { ExperienceDetail } from '../../backend/core/protocol.js';
import type { WebviewIpc } from '../shared/ipc.js';
import { h, setValue, fieldValue } from '../shared/dom.js';
import type { BrowserNotifications, BrowserRequests, BrowserState } from './protocol.js';
import { tokenCells, type ColourBy } from './tokens.js';
import { markMatches } from './highlight.js';
import { conversationView, rateEpisode } from './conversation.js';
import type { ServedMessage } from '../../backend/core/protocol.js';

/** What the detail pane needs of the browser around it. */
export interface DetailContext {
  doc: Document;
  /** The pane it draws into. */
  detail: HTMLElement;
  state: BrowserState;
  save(): void;
  ipc: WebviewIpc<BrowserRequests, BrowserNotifications>;
  /** Runs a curation request: its message, the undo entry, the list and the pane redrawn. */
  act<R extends { changeId: string } | { undone: unknown }>(what: string, run: () => Promise<R>): Promise<void>;
  message(text: string, isError?: boolean): void;
  /** Promoted in this view (id -> expert id): the button stays disabled until Undo. */
  promotedHere: Map<string, string>;
  select(id: string): Promise<void>;
  /** Gives the keyboard back to the list (after an edit is cancelled). */
  focusList(): void;
}

/** `used by the trainer 19 times` (an expert's curation at work). */
export function usedTitle(n: number): string {
  return n ? `used by the trainer ${n} time${n === 1 ? '' : 's'}` : 'not used by the trainer yet';
}

/** A labelled single-select with `value` chosen. */
export function select(
  doc: Document,
  id: string,
  label: string,
  options: [string, string][],
  value: string,
): HTMLElement {
  const s = h(doc, 'vscode-single-select', { id, 'aria-label': label });
  for (const [v, text] of options) s.append(h(doc, 'vscode-option', { value: v, selected: v === value, text }));
  setValue(s, value);
  return s;
}

export function renderDetail(ctx: DetailContext, e: ExperienceDetail, group: Experience[] | undefined): void {
  const { doc, state, ipc, act, promotedHere } = ctx;
  const by: ColourBy = state.colourBy;
  const pieces = e.responsePieces;
  const tokens = h(doc, 'div', { class: 'tokens', 'aria-label': `response tokens coloured by ${by}` });
  for (const c of tokenCells(e, pieces, by)) {
    const span = h(doc, 'span', { class: 'tok', title: c.title, text: c.text });
    span.style.backgroundColor = c.colour;
    span.dataset.strength = String(c.strength);
    tokens.append(span);
  }
  const colourSel = select(
    doc,
    'colour-by',
    'Colour tokens by',
    [
      ['logprob', 'log-prob'],
      ['advantage', 'advantage'],
    ],
    by,
  );
  colourSel.addEventListener('change', () => {
    state.colourBy = (fieldValue(colourSel) as ColourBy) || 'logprob';
    ctx.save();
    renderDetail(ctx, e, group);
  });
  const rewardRows = Object.entries(e.rewardDetails ?? {}).map(([k, v]) =>
    h(doc, 'tr', {}, h(doc, 'td', { text: k }), h(doc, 'td', { text: String(v) })),
  );
  const actions = h(doc, 'div', { class: 'actions' });
  const promote = h(doc, 'vscode-button', { id: 'promote', icon: 'star-add', text: 'Promote to expert' });
  const edit = h(doc, 'vscode-button', {
    id: 'edit-promote',
    secondary: true,
    icon: 'edit',
    text: 'Edit, then promote',
  });
  const reject = h(doc, 'vscode-button', { id: 'reject', secondary: true, icon: 'circle-slash', text: 'Reject' });
  const groupBtn = h(doc, 'vscode-button', {
    id: 'show-group',
    secondary: true,
    icon: 'split-horizontal',
    text: state.view === 'group' ? 'Hide group' : 'Compare group',
  });
  const rate = h(doc, 'span', { class: 'rate', 'aria-label': 'rate' });
  for (let r = 1; r <= 5; r++) {
    const b = h(doc, 'vscode-button', {
      class: 'rate-btn',
      secondary: true,
      'data-rating': String(r),
      title: `rate ${r}`,
      text: String(r),
    });
    b.addEventListener('click', () => void act(`Rated ${r}`, () => ipc.request('rate', { id: e.id, rating: r })));
    rate.append(b);
  }
  const done = promotedHere.get(e.id);
  if (e.source === 'expert' || done) promote.setAttribute('disabled', '');
  if (done) promote.setAttribute('title', `already promoted (${done}); Undo to promote again`);
  actions.append(promote, edit, reject, h(doc, 'span', { text: 'Rate:' }), rate, groupBtn);
  promote.addEventListener('click', () => {
    if (promote.hasAttribute('disabled')) return;
    promote.setAttribute('disabled', '');
    void act(`Promoted ${e.id} to expert`, async () => {
      const r = await ipc.request('promote', { id: e.id });
      promotedHere.set(e.id, r.expertId);
      return r;
    });
  });
  // Rejected already: Undo restores it; a second reject would only log a change that does nothing.
  if (e.feedback?.rejected) {
    reject.setAttribute('disabled', '');
    reject.setAttribute('title', 'already rejected; Undo to restore it');
  }
  reject.addEventListener(
    'click',
    () => !reject.hasAttribute('disabled') && void act(`Rejected ${e.id}`, () => ipc.request('reject', { id: e.id })),
  );
  const editor = h(doc, 'div', { class: 'editor', hidden: true });
  const confirm = h(doc, 'vscode-button', { id: 'edit-confirm', text: 'Promote edited response' });
  const cancel = h(doc, 'vscode-button', { id: 'edit-cancel', secondary: true, text: 'Cancel' });
  // A new box each time the editor opens: vscode-textarea does not redraw a value set again to what it
  // was set to last (the typed text stayed after a cancel), so a fresh one starts from the response.
  const freshArea = (): HTMLElement => {
    const a = h(doc, 'vscode-textarea', { id: 'edit-text', rows: '6', 'aria-label': 'edited response' });
    setValue(a, e.responseText);
    a.addEventListener('keydown', (ev) => {
      if ((ev as KeyboardEvent).key !== 'Escape') return;
      ev.preventDefault();
      ev.stopPropagation();
      cancelEdit();
    });
    return a;
  };
  let area = freshArea();
  editor.append(area, h(doc, 'div', { class: 'actions' }, confirm, cancel));
  // The keyboard goes into the edit box (`e` from the list left it in the list, 10 Tab stops away);
  // Escape or Cancel drop the edit (the next edit starts from the response again) and give it back.
  edit.addEventListener('click', () => {
    const next = freshArea();
    area.replaceWith(next);
    area = next;
    editor.hidden = false;
    // A new vscode-textarea draws its inner box on its first update: focused again once that is done.
    const box = area;
    box.focus();
    void (box as { updateComplete?: Promise<unknown> }).updateComplete?.then(
      () => !editor.hidden && area === box && box.focus(),
    );
  });
  function cancelEdit(): void {
    const next = freshArea();
    area.replaceWith(next);
    area = next;
    editor.hidden = true;
    ctx.focusList();
  }
  cancel.addEventListener('click', cancelEdit);
  confirm.addEventListener('click', () => {
    const text = fieldValue(area);
    if (!text.trim()) {
      ctx.message('the edited response is empty', true);
      return;
    }
    void act(`Promoted an edited response of ${e.id}`, () =>
      ipc.request('promote', { id: e.id, editedResponse: text }),
    );
  });
  groupBtn.addEventListener('click', () => {
    state.view = state.view === 'group' ? 'detail' : 'group';
    ctx.save();
    void ctx.select(e.id);
  });

  const fb = e.feedback;
  const meta = [
    ['task', e.taskId],
    ['group', e.groupId],
    ['run', e.runId],
    ['model version', e.modelVersion === -1 ? 'human' : String(e.modelVersion)],
    ['reward', e.reward.toFixed(4)],
    ['status', e.status + (e.statusReason ? ` (${e.statusReason})` : '')],
    ['source', e.source],
    [
      'used in training',
      e.source === 'expert' ? usedTitle(e.useCount) : `${e.useCount} time${e.useCount === 1 ? '' : 's'}`,
    ],
    [
      'feedback',
      fb
        ? [
            fb.rating !== undefined ? `rated ${fb.rating}` : '',
            fb.rejected ? 'rejected' : '',
            fb.editedFrom ? `edited from ${fb.editedFrom}` : '',
          ]
            .filter(Boolean)
            .join(', ')
        : '',
    ],
  ].filter(([, v]) => v);
  const metaEl = h(doc, 'dl', { class: 'meta' });
  for (const [k, v] of meta) metaEl.append(h(doc, 'dt', { text: k! }), h(doc, 'dd', { text: v! }));
  // The task's own columns from the taskset file (`difficulty: "easy"`, `source`), as the file has them.
  const taskMeta = h(doc, 'dl', { class: 'meta task-meta', 'aria-label': 'task metadata' });
  for (const [k, v] of Object.entries(e.taskMetadata ?? {})) {
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    taskMeta.append(
      h(doc, 'dt', { text: k }),
      h(doc, 'dd', { text: text.length > 300 ? `${text.slice(0, 300)}…` : text }),
    );
  }

  const parts: HTMLElement[] = [
    h(doc, 'h2', { text: e.id }),
    metaEl,
    actions,
    editor,
    ...(taskMeta.childElementCount ? [h(doc, 'h3', { text: 'Task metadata' }), taskMeta] : []),
    h(doc, 'h3', { text: 'Prompt' }),
    h(doc, 'pre', { class: 'prompt' }, ...markMatches(doc, e.promptText, state.filter.text)),
    h(doc, 'h3', {}, 'Response ', colourSel),
    tokens,
  ];
  const served = servedParts(ctx, e);
  if (served.length) parts.splice(parts.indexOf(editor) + 1, 0, ...served);
  if (rewardRows.length)
    parts.push(h(doc, 'h3', { text: 'Reward details' }), h(doc, 'table', { class: 'reward-details' }, ...rewardRows));
  if (state.view === 'group' && group) {
    const cols = h(doc, 'div', { class: 'group', role: 'group', 'aria-label': `group ${e.groupId}` });
    for (const g of [...group].sort((a, b) => b.reward - a.reward)) {
      const col = h(
        doc,
        'div',
        { class: `sample${g.id === e.id ? ' selected' : ''}`, 'data-id': g.id },
        h(doc, 'div', { class: 'sample-head', text: `${g.id} · reward ${g.reward.toFixed(3)} · ${g.source}` }),
        h(doc, 'pre', { text: g.responseText }),
      );
      col.addEventListener('click', () => void ctx.select(g.id));
      cols.append(col);
    }
    parts.push(h(doc, 'h3', { text: `Group ${e.groupId} (${group.length} samples)` }), cols);
  }
  ctx.detail.replaceChildren(...parts);
}

/** A served episode's row (mode serve): its conversation, and a reward posted to the run (refused once rewarded). */
function servedParts(ctx: DetailContext, e: ExperienceDetail): HTMLElement[] {
  const m = e.metadata ?? {};
  if (m.served !== true || typeof m.episode_id !== 'string') return [];
  const { doc, ipc } = ctx;
  const episodeId = m.episode_id;
  const messages = Array.isArray(m.messages) ? (m.messages as ServedMessage[]) : [];
  return [
    h(doc, 'h3', { text: `Served episode ${episodeId}` }),
    rateEpisode(doc, (reward) => ipc.request('rateEpisode', { runId: e.runId, episodeId, reward })),
    conversationView(doc, {
      messages,
      tokens: e.responseTokens,
      mask: e.actionMask,
      logprobs: e.logprobs,
      ...(e.responsePieces ? { pieces: e.responsePieces } : {}),
    }),
  ];
}
