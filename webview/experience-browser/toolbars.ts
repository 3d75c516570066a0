// The experience browser's two toolbars: the filter bar (the filter fields, source, status, sort and
// its order, hide rejected, the counts) and the bulk-curation bar (top-k per task with a minimum
// reward, Undo, the message line, and the confirmation row of a bulk promotion). Built here; app.ts
// reads them and wires what they do.
import { h, setValue } from '../shared/dom.js';
import type { FilterInputs } from './filters.js';
import type { BrowserState } from './protocol.js';
import { select } from './detail-view.js';

export const FIELDS: { key: keyof FilterInputs; label: string; placeholder: string; width?: string }[] = [
  { key: 'runId', label: 'Run', placeholder: 'run id' },
  { key: 'taskId', label: 'Task', placeholder: 'task id' },
  { key: 'minReward', label: 'Reward ≥', placeholder: 'e.g. 0.5', width: '5em' },
  { key: 'maxReward', label: 'Reward ≤', placeholder: 'e.g. 1', width: '5em' },
  { key: 'version', label: 'Model version', placeholder: '3 or 2-5', width: '5em' },
  { key: 'text', label: 'Text', placeholder: 'search prompt / response' },
];

/** A visible label with its field (placeholders vanish while typing; labels do not). */
function labelled(doc: Document, forId: string, text: string, field: HTMLElement): HTMLElement {
  return h(doc, 'label', { class: 'field', for: forId }, h(doc, 'span', { class: 'field-label', text }), field);
}

/** The filter bar, showing `inputs` and `state`'s sort; `onOrder` after the order button flips state.descending. */
export function filterBar(doc: Document, state: BrowserState, inputs: FilterInputs, onOrder: () => void) {
  const bar = h(doc, 'div', { class: 'toolbar', role: 'search' });
  for (const f of FIELDS) {
    const tf = h(doc, 'vscode-textfield', {
      id: `f-${f.key}`,
      placeholder: f.placeholder,
      'aria-label': f.label,
      title: f.label,
    });
    if (f.width) tf.style.width = f.width;
    setValue(tf, String(inputs[f.key]));
    bar.append(labelled(doc, `f-${f.key}`, f.label, tf));
  }
  const order = h(doc, 'vscode-button', { id: 'f-order', secondary: true, title: 'Toggle the sort order' });
  const showOrder = () => {
    order.textContent = state.descending ? '↓ descending' : '↑ ascending';
    order.setAttribute('aria-label', `sort order: ${state.descending ? 'descending' : 'ascending'}`);
  };
  showOrder();
  order.addEventListener('click', (ev) => {
    ev.stopPropagation();
    state.descending = !state.descending;
    showOrder();
    onOrder();
  });
  bar.append(
    labelled(
      doc,
      'f-source',
      'Source',
      select(
        doc,
        'f-source',
        'Source',
        [
          ['', 'any source'],
          ['usual', 'usual'],
          ['expert', 'expert'],
        ],
        inputs.source,
      ),
    ),
    labelled(
      doc,
      'f-status',
      'Status',
      select(
        doc,
        'f-status',
        'Status',
        [
          ['', 'any status'],
          ['ok', 'ok'],
          ['invalid', 'invalid'],
          ['infra_failure', 'infra failure'],
        ],
        inputs.status,
      ),
    ),
    labelled(
      doc,
      'f-sort',
      'Sort by',
      select(
        doc,
        'f-sort',
        'Sort by',
        [
          ['createdAt', 'time'],
          ['reward', 'reward'],
          ['modelVersion', 'version'],
        ],
        state.sort,
      ),
    ),
    order,
  );
  const hideRejected = h(doc, 'vscode-checkbox', { id: 'f-hideRejected', label: 'hide rejected' });
  (hideRejected as unknown as { checked: boolean }).checked = inputs.hideRejected;
  bar.append(hideRejected);
  const count = h(doc, 'span', { class: 'count', 'aria-live': 'polite' });
  const counts = h(doc, 'span', { class: 'counts' });
  bar.append(count, counts);
  return { bar, hideRejected, count, counts };
}

/** The bulk-curation bar and the confirmation row a bulk promotion shows before anything changes. */
export function bulkBar(doc: Document) {
  const bulk = h(doc, 'div', { class: 'toolbar bulk' });
  const topK = h(doc, 'vscode-textfield', { id: 'bulk-k', 'aria-label': 'top k per task' });
  topK.style.width = '4em';
  setValue(topK, '1');
  const minReward = h(doc, 'vscode-textfield', { id: 'bulk-min', 'aria-label': 'minimum reward' });
  minReward.style.width = '5em';
  setValue(minReward, '1');
  const bulkBtn = h(doc, 'vscode-button', { id: 'bulk-promote', secondary: true, text: 'Promote top-k per task…' });
  const undoBtn = h(doc, 'vscode-button', { id: 'undo', secondary: true, icon: 'discard', text: 'Undo' });
  const msg = h(doc, 'span', { class: 'message', role: 'status' });
  // The preview of a bulk promotion and its confirmation (nothing changes before "Promote N").
  const confirmRow = h(doc, 'div', {
    class: 'toolbar bulk-confirm',
    hidden: true,
    role: 'alertdialog',
    'aria-label': 'confirm bulk promotion',
  });
  bulk.append(
    labelled(doc, 'bulk-k', 'Top k per task', topK),
    labelled(doc, 'bulk-min', 'with reward ≥', minReward),
    bulkBtn,
    undoBtn,
    msg,
  );
  return { bulk, topK, minReward, bulkBtn, undoBtn, msg, confirmRow };
}
