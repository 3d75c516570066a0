// A served episode (mode serve) drawn as the conversation it was: its turns (system / user /
// assistant / tool) with their tool calls, the model's own replies shown token by token and
// highlighted as trained (the loss mask's 1s), and the whole token sequence after the first prompt
// with the masked turns in between dimmed. Plus the rating a person gives it, posted as its reward.
import type { ServedMessage, ServedRewardResult } from '../../backend/core/protocol.js';
import { h } from '../shared/dom.js';

export interface Conversation {
  messages: ServedMessage[];
  tokens: number[];
  mask: number[];
  logprobs: number[];
  pieces?: string[];
}

/** The runs of trained tokens (mask 1), in order: [start, end) each. */
export function trainedRuns(mask: number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] !== 1) continue;
    const start = i;
    while (i < mask.length && mask[i] === 1) i++;
    runs.push([start, i]);
    i--;
  }
  return runs;
}

function tokenSpan(doc: Document, c: Conversation, i: number): HTMLElement {
  const trained = c.mask[i] === 1;
  const text = c.pieces?.[i] ?? `⟨${c.tokens[i]}⟩`;
  const lp = c.logprobs[i];
  return h(doc, 'span', {
    class: `tok ${trained ? 'trained' : 'context'}`,
    text,
    title: trained
      ? `token ${c.tokens[i]}: the model's own, trained (log-prob ${lp?.toFixed(4)})`
      : `token ${c.tokens[i]}: context (tool output, user, template), not trained`,
  });
}

/** The conversation: one block per turn; the model's replies of this episode token by token. */
export function conversationView(doc: Document, c: Conversation): HTMLElement {
  const runs = trainedRuns(c.mask);
  // The episode's replies are its last assistant turns (earlier ones a client wrote were context).
  const assistants = c.messages.map((m, i) => (m.role === 'assistant' ? i : -1)).filter((i) => i >= 0);
  const own = new Map<number, [number, number]>();
  const n = Math.min(runs.length, assistants.length);
  for (let k = 0; k < n; k++) own.set(assistants[assistants.length - n + k]!, runs[runs.length - n + k]!);
  const turns = c.messages.map((m, i) => {
    const run = own.get(i);
    const body = run
      ? h(
          doc,
          'div',
          { class: 'tokens trained-reply', 'aria-label': 'trained tokens' },
          ...Array.from({ length: run[1] - run[0] }, (_, k) => tokenSpan(doc, c, run[0] + k)),
        )
      : h(doc, 'pre', { class: 'turn-text', text: m.content });
    const calls = (m.tool_calls ?? []).map((t) =>
      h(
        doc,
        'div',
        { class: 'tool-call' },
        h(doc, 'span', { class: 'codicon codicon-tools' }),
        h(doc, 'code', { text: `${t.function.name}(${t.function.arguments})` }),
      ),
    );
    const label =
      m.role === 'tool'
        ? `tool${m.name ? ` ${m.name}` : ''}${m.tool_call_id ? ` · ${m.tool_call_id}` : ''}`
        : m.role + (run ? ` · trained, ${run[1] - run[0]} tokens` : '');
    return h(
      doc,
      'div',
      { class: `turn role-${m.role}${run ? ' own' : ''}`, 'data-role': m.role },
      h(doc, 'div', { class: 'turn-head', text: label }),
      body,
      ...calls,
    );
  });
  const all = h(
    doc,
    'div',
    { class: 'tokens served-tokens', 'aria-label': 'tokens after the first prompt' },
    ...c.tokens.map((_, i) => tokenSpan(doc, c, i)),
  );
  const trained = c.mask.filter((m) => m === 1).length;
  return h(
    doc,
    'div',
    { class: 'conversation' },
    ...turns,
    h(doc, 'h4', {
      text: `Tokens after the first prompt: ${trained} trained (highlighted), ${c.tokens.length - trained} context`,
    }),
    all,
  );
}

/** Reward buttons for a served episode; the run's answer (accepted, or refused and why) is shown. */
export function rateEpisode(doc: Document, post: (reward: number) => Promise<ServedRewardResult>): HTMLElement {
  const out = h(doc, 'span', { class: 'rate-result', role: 'status' });
  const row = h(doc, 'div', { class: 'actions rate-episode' }, h(doc, 'span', { text: 'Reward this episode:' }));
  for (const [r, label] of [
    [1, '1 (good)'],
    [0.5, '0.5'],
    [0, '0 (bad)'],
  ] as const) {
    const b = h(doc, 'vscode-button', {
      class: 'reward-btn',
      secondary: r !== 1,
      'data-reward': String(r),
      text: label,
    });
    b.addEventListener('click', () => {
      out.textContent = 'posting…';
      out.classList.remove('error');
      post(r).then(
        (res) => {
          out.textContent =
            res.status === 'accepted' ? `accepted: reward ${res.reward ?? r} posted` : `refused: ${res.reason}`;
          out.classList.toggle('error', res.status !== 'accepted');
        },
        (e: Error) => {
          out.textContent = e.message;
          out.classList.add('error');
        },
      );
    });
    row.append(b);
  }
  row.append(out);
  return row;
}
