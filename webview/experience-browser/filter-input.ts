// The filter bar at work: what is typed is parsed once typing pauses (a bad field is marked and named
// in the message line, nothing is sent), then the list reloads from the top; the host's preset filter
// fills the fields the same way.
import { checked, fieldValue, setValue } from '../shared/dom.js';
import { EMPTY_INPUTS, inputsOf, parseFilter, type FilterInputs } from './filters.js';
import type { BrowserState } from './protocol.js';
import type { BrowserStore } from './store.js';
import { FIELDS } from './toolbars.js';

/** Typing is parsed once it pauses this long. */
const FILTER_PAUSE_MS = 250;

export interface FilterDeps {
  doc: Document;
  store: BrowserStore;
  /** The filter bar and its hide-rejected box (toolbars.ts). */
  bar: HTMLElement;
  hideRejected: HTMLElement;
  viewport: HTMLElement;
  message(text: string, isError?: boolean): void;
  reload(): void;
}

/** Returns what the host's setFilter does. */
export function mountFilterInput(d: FilterDeps): (filter: BrowserState['filter']) => void {
  const { doc, message } = d;
  const field = (key: string) => doc.getElementById(`f-${key}`);
  const applyFilter = () => {
    const raw: FilterInputs = { ...EMPTY_INPUTS };
    for (const f of FIELDS) (raw as unknown as Record<string, string>)[f.key] = fieldValue(field(f.key));
    raw.source = fieldValue(field('source'));
    raw.status = fieldValue(field('status'));
    raw.hideRejected = checked(d.hideRejected);
    const { filter, errors } = parseFilter(raw);
    for (const f of [...FIELDS.map((x) => x.key)]) field(f)?.toggleAttribute('invalid', !!errors[f]);
    const bad = Object.values(errors);
    if (bad.length) {
      message(bad.join('; '), true);
      return;
    }
    message('');
    const sort = (fieldValue(field('sort')) as BrowserState['sort']) || 'createdAt';
    d.store.dispatch({ type: 'filterApplied', filter, sort });
    d.viewport.scrollTop = 0;
    d.reload();
  };
  let filterTimer = 0;
  const onFilterInput = () => {
    message('');
    clearTimeout(filterTimer);
    filterTimer = setTimeout(applyFilter, FILTER_PAUSE_MS) as unknown as number;
  };
  d.bar.addEventListener('input', onFilterInput);
  d.bar.addEventListener('change', onFilterInput);
  return (filter) => {
    d.store.dispatch({ type: 'filterSet', filter });
    const i = inputsOf(filter);
    for (const f of FIELDS) setValue(field(f.key), String(i[f.key]));
    setValue(field('source'), i.source);
    setValue(field('status'), i.status);
    d.reload();
  };
}
