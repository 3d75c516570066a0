// One-key curation in the browser (the list or the detail has the focus, no text field): each key
// presses the detail's button, so a shortcut does exactly what the click does (disabled stays disabled).
export const SHORTCUTS: Record<string, { button: string; what: string }> = {
  p: { button: '#promote', what: 'promote to expert' },
  e: { button: '#edit-promote', what: 'edit, then promote' },
  r: { button: '#reject', what: 'reject' },
  g: { button: '#show-group', what: 'compare group' },
  '1': { button: '.rate-btn[data-rating="1"]', what: 'rate 1' },
  '2': { button: '.rate-btn[data-rating="2"]', what: 'rate 2' },
  '3': { button: '.rate-btn[data-rating="3"]', what: 'rate 3' },
  '4': { button: '.rate-btn[data-rating="4"]', what: 'rate 4' },
  '5': { button: '.rate-btn[data-rating="5"]', what: 'rate 5' },
  u: { button: '#undo', what: 'undo the latest change' },
  '/': { button: '#f-text', what: 'search' },
};

/** The hint line under the list. */
export const SHORTCUT_HINT =
  'Keys: ↑↓ select · p promote · e edit (Esc cancels) · r reject · 1-5 rate · g group · u undo · / search';

/** Whether a key event comes from a text field (then it types, it is no shortcut). */
export function typing(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  const tag = el?.tagName?.toLowerCase() ?? '';
  return (
    tag === 'input' ||
    tag === 'textarea' ||
    tag === 'select' ||
    tag === 'vscode-textfield' ||
    tag === 'vscode-textarea' ||
    tag === 'vscode-single-select' ||
    !!el?.isContentEditable
  );
}

/** `promote: 'Promoted e1'` -> the verb for a failure (`Promote failed`, never `Promoted failed`). */
export function failedVerb(done: string): string {
  const first = done.split(' ')[0] ?? '';
  const verbs: Record<string, string> = {
    Promoted: 'Promote',
    Rejected: 'Reject',
    Rated: 'Rating',
    Undid: 'Undo',
    Undone: 'Undo',
  };
  return verbs[first] ?? (first || 'Change');
}
