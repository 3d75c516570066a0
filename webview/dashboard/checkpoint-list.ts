// The dashboard's checkpoint list: newest first, each with an Evaluate button whose result (or
// "evaluating…") survives the list's re-render, and is dropped when another run is shown meanwhile.
import type { RunInfo } from '../../backend/core/protocol.js';
import type { WebviewIpc } from '../shared/ipc.js';
import { h } from '../shared/dom.js';
import type { DashboardNotifications, DashboardRequests } from './protocol.js';

const EVALUATING = 'evaluating…';

export interface CheckpointContext {
  doc: Document;
  ipc: WebviewIpc<DashboardRequests, DashboardNotifications>;
  /** The list's element. */
  checkpoints: HTMLElement;
  /** Evaluation results per checkpoint path of the shown run. */
  evals: Map<string, string>;
  /** Bumped by every show(): an answer for a run no longer shown is dropped. */
  generation(): number;
  fail(err: unknown): void;
}

export function renderCheckpoints(ctx: CheckpointContext, r: RunInfo): void {
  const { doc, ipc, checkpoints, evals } = ctx;
  // Newest first; evaluation results (and ones still running) survive the re-render.
  const list = [...(r.checkpoints ?? [])].sort((a, b) => b.version - a.version);
  checkpoints.replaceChildren(
    ...list.map((c) => {
      const b = h(doc, 'vscode-button', {
        secondary: true,
        icon: 'beaker',
        text: 'Evaluate',
        'aria-label': `Evaluate v${c.version}`,
      });
      const result = h(doc, 'span', { class: 'eval-result', role: 'status', text: evals.get(c.path) ?? '' });
      if (evals.get(c.path) === EVALUATING) b.toggleAttribute('disabled', true);
      b.addEventListener('click', () => {
        const gen = ctx.generation();
        const runId = r.id;
        evals.set(c.path, EVALUATING);
        b.toggleAttribute('disabled', true);
        result.textContent = EVALUATING;
        const put = (text: string) => {
          if (gen !== ctx.generation()) return;
          if (text) evals.set(c.path, text);
          else evals.delete(c.path);
          const el = checkpoints.querySelector(`.checkpoint[data-version="${c.version}"]`);
          const span = el?.querySelector('.eval-result');
          if (span) span.textContent = text;
          el?.querySelector('vscode-button')?.toggleAttribute('disabled', false);
        };
        void ipc
          .request('evaluate', { runId, checkpoint: c.path })
          .then((e) => put(`v${c.version}: accuracy ${(100 * e.accuracy).toFixed(1)}% on ${e.tasks} tasks`))
          .catch((err) => {
            put('');
            ctx.fail(err);
          });
      });
      return h(
        doc,
        'div',
        { class: 'checkpoint', 'data-version': String(c.version) },
        h(doc, 'span', { text: `v${c.version}${c.step !== undefined ? ` (step ${c.step})` : ''} ` }),
        h(doc, 'code', { text: c.path }),
        b,
        result,
      );
    }),
  );
}
