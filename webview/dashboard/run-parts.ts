// The dashboard's run parts drawn from a status answer: the components' states and the engines.
import type { ComponentState, RunEngines } from '../../backend/core/protocol.js';
import { h } from '../shared/dom.js';

/** Each component (explorer, trainer, ...) with its state and idle share. */
export function renderComponents(doc: Document, components: HTMLElement, cs: ComponentState[] | undefined): void {
  components.replaceChildren(
    ...(cs ?? []).map((c) =>
      h(
        doc,
        'span',
        { class: `component st-${c.state}` },
        h(doc, 'b', { text: c.name }),
        ` ${c.state}${c.idleFraction !== undefined ? ` · idle ${(100 * c.idleFraction).toFixed(0)}%` : ''}`,
      ),
    ),
  );
}

/** The run's tensor engine and what samples its rollouts; hidden when the status carries neither. */
export function renderEngines(doc: Document, engines: HTMLElement, e: RunEngines | undefined): void {
  const parts: [string, string | undefined][] = [
    ['Tensor engine', e?.tensor],
    ['Rollouts', e?.rollout],
  ];
  engines.replaceChildren(
    ...parts
      .filter(([, v]) => v)
      .map(([k, v]) =>
        h(
          doc,
          'span',
          { class: `engine engine-${k === 'Rollouts' ? 'rollout' : 'tensor'}` },
          h(doc, 'b', { text: k }),
          ` ${v}`,
        ),
      ),
  );
  engines.hidden = engines.childElementCount === 0;
}
