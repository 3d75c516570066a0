// The experience browser's state in one place (the components read it, and change it through typed
// actions): what the webview saves across hides and reloads (BrowserState: filter, sort, selection,
// scroll, colouring, view) and what lives for the session (the buffer shown, one undo stack per
// buffer, the experiences promoted here). dispatch applies an action and saves what is kept.
import type { BrowserState } from './protocol.js';
import { UndoStack } from './undo-stack.js';

export const DEFAULT_STATE: BrowserState = {
  filter: {},
  sort: 'createdAt',
  descending: true,
  scrollTop: 0,
  colourBy: 'logprob',
  view: 'detail',
};

/** Scrolling is saved once it settles, not on every scroll event. */
const SCROLL_SAVE_MS = 200;

export type BrowserAction =
  /** The filter bar's fields, parsed: back to the top of the list. */
  | { type: 'filterApplied'; filter: BrowserState['filter']; sort: BrowserState['sort'] }
  /** The host's preset filter (e.g. "Expert experiences" in the sidebar). */
  | { type: 'filterSet'; filter: BrowserState['filter'] }
  | { type: 'selected'; id: string }
  | { type: 'scrolled'; top: number }
  /** Another buffer is shown: its own undo stack; nothing promoted in it yet. */
  | { type: 'bufferShown'; path: string | undefined }
  /** A change was undone: the experiences it touched may be promoted again. */
  | { type: 'undone'; experienceIds: Iterable<string> };

export class BrowserStore {
  readonly state: BrowserState;
  /** Experiences promoted in this session (id -> expert id): their Promote stays disabled until undone. */
  readonly promotedHere = new Map<string, string>();
  // One undo stack per buffer: Undo never reverts a change made in the buffer shown before.
  private readonly undoByBuffer = new Map<string, UndoStack>();
  private bufferKey = '';
  private scrollSave = 0;

  constructor(
    saved: BrowserState | undefined,
    private readonly persist: (s: BrowserState) => void,
  ) {
    this.state = { ...DEFAULT_STATE, ...(saved ?? {}) };
  }

  /** The undo stack of the buffer shown. */
  get undo(): UndoStack {
    let u = this.undoByBuffer.get(this.bufferKey);
    if (!u) this.undoByBuffer.set(this.bufferKey, (u = new UndoStack()));
    return u;
  }

  /** Whether `path` is the buffer shown already (the host's bufferChanged for new rows, not another buffer). */
  shows(path: string | undefined): boolean {
    return (path ?? '') === this.bufferKey;
  }

  /** Saves the kept state; also for the fields the toolbars and the detail pane set in place (sort order, colouring, view). */
  save(): void {
    this.persist(this.state);
  }

  dispatch(a: BrowserAction): void {
    const s = this.state;
    switch (a.type) {
      case 'filterApplied':
        s.filter = a.filter;
        s.sort = a.sort;
        s.scrollTop = 0;
        return this.save();
      case 'filterSet':
        s.filter = a.filter;
        return this.save();
      case 'selected':
        s.selectedId = a.id;
        return this.save();
      case 'scrolled':
        s.scrollTop = a.top;
        clearTimeout(this.scrollSave);
        this.scrollSave = setTimeout(() => this.save(), SCROLL_SAVE_MS) as unknown as number;
        return;
      case 'bufferShown':
        this.bufferKey = a.path ?? '';
        if (a.path && s.bufferPath !== a.path) {
          s.bufferPath = a.path;
          this.save();
        }
        this.promotedHere.clear();
        return;
      case 'undone': {
        const ids = new Set(a.experienceIds);
        for (const [id, expert] of this.promotedHere) if (ids.has(id) || ids.has(expert)) this.promotedHere.delete(id);
        return;
      }
    }
  }
}
