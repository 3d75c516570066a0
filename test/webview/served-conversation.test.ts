// Served episodes (issue 43 item 7) in the experience browser: the Served episodes pane lists what
// serve runs wait to be rewarded for; one opens as its conversation (system / user / assistant /
// tool turns, the tool call, the model's own tokens highlighted as trained, the tool output dimmed)
// and a rating is posted as its reward, the run's refusal shown. A stored served row shows the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServedEpisode, ServedRewardResult } from '../../backend/core/protocol.js';
import type { Experience } from '../../backend/core/types.js';
import { mountBrowser } from '../../webview/experience-browser/app.js';
import type { BrowserRequests } from '../../webview/experience-browser/protocol.js';
import { trainedRuns } from '../../webview/experience-browser/conversation.js';
import { host, until } from './dom.js';

const CALL = { id: 'call_1', type: 'function', function: { name: 'calculator', arguments: '{"expression":"6*7"}' } };
const MESSAGES = [
  { role: 'system', content: 'Use the calculator.' },
  { role: 'user', content: 'What is 6*7?' },
  { role: 'assistant', content: '', tool_calls: [CALL] },
  { role: 'tool', content: '42', tool_call_id: 'call_1' },
  { role: 'assistant', content: '42' },
];
// Reply 1 (3 tokens), the tool turn (2 tokens, masked), reply 2 (2 tokens).
const EPISODE: ServedEpisode = {
  episodeId: 'ep-7',
  taskId: 't-mul',
  calls: 2,
  branches: 1,
  lastActivity: 0,
  messages: MESSAGES,
  tokens: [10, 11, 12, 20, 21, 30, 31],
  mask: [1, 1, 1, 0, 0, 1, 1],
  logprobs: [-0.1, -0.2, -0.3, 0, 0, -0.5, -0.01],
  pieces: ['<tool_call>', '{…}', '</tool_call>', 'tool: ', '42', '4', '2'],
};

function handlers(log: { method: string; params: unknown }[]) {
  const rewarded = new Set<string>();
  const stored: Experience = {
    id: 's1',
    taskId: 't-mul',
    groupId: 'r:serve:t-mul',
    runId: 'r',
    source: 'usual',
    promptTokens: [1],
    promptText: 'What is 6*7?',
    responseTokens: EPISODE.tokens,
    responseText: '42',
    actionMask: EPISODE.mask,
    logprobs: EPISODE.logprobs,
    modelVersion: 1,
    reward: 1,
    status: 'ok',
    useCount: 0,
    createdAt: 1,
    metadata: { served: true, episode_id: 'ep-old', calls: 2, messages: MESSAGES },
  };
  return {
    list: () => ({
      total: 1,
      rows: [
        {
          id: 's1',
          taskId: 't-mul',
          groupId: stored.groupId,
          runId: 'r',
          source: 'usual',
          status: 'ok',
          reward: 1,
          modelVersion: 1,
          createdAt: 1,
          promptPreview: 'What is 6*7?',
          responsePreview: '42',
          responseTokens: 7,
        },
      ],
    }),
    get: () => ({ ...stored, responsePieces: EPISODE.pieces }),
    served: () => ({ runs: [{ runId: 'r', name: 'agent', baseUrl: 'http://127.0.0.1:9/v1', episodes: [EPISODE] }] }),
    rateEpisode: (p: { runId: string; episodeId: string; reward: number }): ServedRewardResult => {
      log.push({ method: 'rateEpisode', params: p });
      // The run's answer: the stored one was rewarded long ago; a waiting one once.
      if (p.episodeId === 'ep-old' || rewarded.has(p.episodeId))
        return { episodeId: p.episodeId, status: 'refused', reason: 'already rewarded' };
      rewarded.add(p.episodeId);
      return { episodeId: p.episodeId, status: 'accepted', reward: p.reward };
    },
  };
}

const click = (el: Element | null) =>
  el!.dispatchEvent(
    new (el!.ownerDocument.defaultView as unknown as typeof globalThis).Event('click', { bubbles: true }),
  );

test('the trained runs of a mask: one per reply', () => {
  assert.deepEqual(trainedRuns([1, 1, 0, 0, 1, 0, 1, 1]), [
    [0, 2],
    [4, 5],
    [6, 8],
  ]);
  assert.deepEqual(trainedRuns([0, 0]), []);
});

test('a waiting served episode opens as a conversation with its trained tokens highlighted, and is rated', async () => {
  const log: { method: string; params: unknown }[] = [];
  const h = host<BrowserRequests>(handlers(log));
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await app.firstPaint;
  const doc = h.document;
  click(doc.getElementById('served-episodes'));
  const row = await until(() => doc.querySelector('.served-row[data-episode="ep-7"]'), 'the waiting episode');
  assert.match(row.textContent!, /ep-7.*t-mul.*2 calls.*What is 6\*7\?/);
  click(row);
  await until(() => doc.querySelector('.detail .conversation'), 'the conversation');
  const turns = Array.from(doc.querySelectorAll('.detail .turn')) as HTMLElement[];
  assert.deepEqual(
    turns.map((t) => t.dataset.role),
    ['system', 'user', 'assistant', 'tool', 'assistant'],
  );
  // The tool call, and the tool's output as its own turn.
  assert.equal(turns[2]!.querySelector('.tool-call code')!.textContent, 'calculator({"expression":"6*7"})');
  assert.equal(turns[3]!.querySelector('.turn-text')!.textContent, '42');
  assert.match(turns[3]!.querySelector('.turn-head')!.textContent!, /tool · call_1/);
  // Each reply token by token, trained; the tool's turn is not.
  const own = (t: HTMLElement) => Array.from(t.querySelectorAll('.tok.trained')).map((x) => x.textContent);
  assert.deepEqual(own(turns[2]!), ['<tool_call>', '{…}', '</tool_call>']);
  assert.deepEqual(own(turns[4]!), ['4', '2']);
  assert.match(turns[4]!.querySelector('.turn-head')!.textContent!, /trained, 2 tokens/);
  assert.equal(turns[3]!.querySelectorAll('.tok').length, 0);
  const strip = Array.from(doc.querySelectorAll('.served-tokens .tok')) as HTMLElement[];
  assert.deepEqual(
    strip.map((t) => t.classList.contains('trained')),
    [true, true, true, false, false, true, true],
  );
  assert.match(strip[3]!.title, /context .* not trained/);

  click(doc.querySelector('.reward-btn[data-reward="1"]'));
  await until(() => /accepted/.test(doc.querySelector('.rate-result')!.textContent!), 'accepted');
  assert.deepEqual(log.at(-1), { method: 'rateEpisode', params: { runId: 'r', episodeId: 'ep-7', reward: 1 } });
  click(doc.querySelector('.reward-btn[data-reward="0"]'));
  await until(() => /refused/.test(doc.querySelector('.rate-result')!.textContent!), 'refused');
  assert.equal(doc.querySelector('.rate-result')!.textContent, 'refused: already rewarded');
  assert.ok(doc.querySelector('.rate-result')!.classList.contains('error'));
  await h.close();
});

test('a stored served row shows its conversation; its rating is refused as already rewarded', async () => {
  const log: { method: string; params: unknown }[] = [];
  const h = host<BrowserRequests>(handlers(log));
  const app = mountBrowser(h.root, h.ipc as never, undefined);
  h.notify('bufferChanged', { path: '/b.db', counts: undefined });
  await app.firstPaint;
  await app.select('s1');
  const doc = h.document;
  await until(() => doc.querySelector('.detail .conversation'), 'the conversation');
  assert.equal(doc.querySelectorAll('.detail .turn').length, 5);
  assert.equal(doc.querySelectorAll('.detail .turn.own').length, 2);
  click(doc.querySelector('.reward-btn[data-reward="0.5"]'));
  await until(() => /refused/.test(doc.querySelector('.rate-result')!.textContent!), 'refused');
  assert.deepEqual(log.at(-1)!.params, { runId: 'r', episodeId: 'ep-old', reward: 0.5 });
  await h.close();
});
