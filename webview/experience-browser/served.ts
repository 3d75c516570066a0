// The "Served episodes" pane of the experience browser: the episodes running serve runs answered and
// wait to be rewarded for (they reach the buffer only once rewarded), each opened as a conversation
// (conversation.ts) that a person rates; the rating goes to the run as an agent's reward would.
import type { ServedEpisode } from '../../backend/core/protocol.js';
import type { WebviewIpc } from '../shared/ipc.js';
import { h } from '../shared/dom.js';
import { conversationView, rateEpisode } from './conversation.js';
import type { BrowserNotifications, BrowserRequests, ServingRun } from './protocol.js';

type Ipc = WebviewIpc<BrowserRequests, BrowserNotifications>;

/** One served episode: its conversation and its reward buttons. */
export function episodePane(
  doc: Document,
  ipc: Ipc,
  runId: string,
  ep: ServedEpisode,
  back?: () => void,
): HTMLElement[] {
  return [
    h(doc, 'h2', { text: ep.episodeId }),
    h(
      doc,
      'p',
      { class: 'served-meta' },
      `run ${runId} · task ${ep.taskId} · ${ep.calls} call${ep.calls === 1 ? '' : 's'}${ep.branches > 1 ? ` · ${ep.branches} branches` : ''} · waiting for its reward`,
    ),
    rateEpisode(doc, (reward) => ipc.request('rateEpisode', { runId, episodeId: ep.episodeId, reward })),
    ...(back
      ? [
          (() => {
            const b = h(doc, 'vscode-button', { id: 'served-back', secondary: true, text: 'All served episodes' });
            b.addEventListener('click', back);
            return b;
          })(),
        ]
      : []),
    conversationView(doc, ep),
  ];
}

function firstUser(ep: ServedEpisode): string {
  return ep.messages.find((m) => m.role === 'user')?.content ?? '';
}

/** Lists the serving runs' waiting episodes in `pane`; a click opens one. */
export async function showServed(doc: Document, ipc: Ipc, pane: HTMLElement): Promise<ServingRun[]> {
  pane.replaceChildren(h(doc, 'p', { text: 'Asking the serve runs…' }));
  const { runs } = await ipc.request('served', {});
  const draw = () => {
    const parts: HTMLElement[] = [h(doc, 'h2', { text: 'Served episodes waiting for a reward' })];
    if (!runs.length)
      parts.push(h(doc, 'p', { text: 'No run is serving. Start one with "RFT Studio: Serve Policy for an Agent…".' }));
    for (const r of runs) {
      parts.push(h(doc, 'h3', { text: `${r.name ?? r.runId} (${r.runId}) · ${r.baseUrl}` }));
      if (r.error) parts.push(h(doc, 'p', { class: 'error', text: r.error }));
      else if (!r.episodes.length) parts.push(h(doc, 'p', { text: 'No episode is waiting for a reward.' }));
      const list = h(doc, 'div', { class: 'served-list', role: 'list' });
      for (const ep of r.episodes) {
        const row = h(
          doc,
          'div',
          { class: 'served-row', role: 'listitem', tabindex: '0', 'data-episode': ep.episodeId },
          h(doc, 'span', { class: 'served-id', text: ep.episodeId }),
          h(doc, 'span', { class: 'served-task', text: ep.taskId }),
          h(doc, 'span', { text: `${ep.calls} call${ep.calls === 1 ? '' : 's'}` }),
          h(doc, 'span', { class: 'served-first', text: firstUser(ep).slice(0, 120) }),
        );
        const open = () => pane.replaceChildren(...episodePane(doc, ipc, r.runId, ep, draw));
        row.addEventListener('click', open);
        row.addEventListener('keydown', (e) => (e as KeyboardEvent).key === 'Enter' && open());
        list.append(row);
      }
      parts.push(list);
    }
    pane.replaceChildren(...parts);
  };
  draw();
  return runs;
}
