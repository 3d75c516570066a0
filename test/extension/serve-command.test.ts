// Serve Policy for an Agent… (issue 43 item 7) through the real extension (fake vscode) and a real
// backend: the user's training config is written as a serve config under a new name (theirs is left
// as it was), the run starts, the command shows its base URL from `serve/info` and Copy Token copies
// the token the endpoint takes. An agent's call (the real `openai` client) then waits in the buffer
// browser's Served episodes as a conversation; a person's rating is posted as its reward (accepted),
// and a second one is refused as already rewarded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { parse } from 'yaml';
import { activateWith, deactivateFrom, until, vscode, workspaceDir } from '../../tools/fake-vscode/harness.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { makeHfModel, TINY_QWEN2 } from '../../tools/hf-model.js';
import type { ServeInfo, ServedRewardResult } from '../../backend/core/protocol.js';
import type { ServingRun } from '../../webview/experience-browser/protocol.js';

const TRAIN = `name: agent
seed: 1
model: { checkpoint: model }
taskset: { path: tasks.jsonl }
eval: { path: tasks.jsonl }
workflow: { reward: exact_match }
algorithm: { name: grpo }
explorer: { tasks_per_step: 2, repeat_times: 2, sampling: { max_new_tokens: 6 }, eval_sampling: { max_new_tokens: 3 } }
trainer: { batch_size: 2, steps: 2, lr: 0.01 }
buffer: { storage: sqlite }
`;

test(
  'Serve Policy for an Agent…: a serve config beside the user’s, the base URL shown, the token copied, an episode rated',
  { timeout: 600_000 },
  async () => {
    vscode.resetFake();
    const ws = workspaceDir({ 'agent.rft.yaml': TRAIN });
    writeFileSync(join(ws, 'tasks.jsonl'), '{"id": "q1", "prompt": "Say yes.", "answer": "yes", "domain": "text"}\n');
    makeHfModel(join(ws, 'model'), { ...TINY_QWEN2, hidden: 16, layers: 1, heads: 2, kvHeads: 1, intermediate: 24 });
    const { ctx, api } = await activateWith(ws);
    const s = api.services!;
    let id = '';
    try {
      vscode.answers.quickPick.push((items) => (items as string[]).find((i) => i === 'agent.rft.yaml'));
      // The "Run … started" message, then the serving one: Copy Token.
      vscode.answers.message.push(undefined, 'Copy Token');
      const info = (await vscode.commands.executeCommand('rftStudio.servePolicy')) as ServeInfo | undefined;
      assert.ok(info, 'the run serves');
      id = info!.runId;
      assert.match(info!.baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);

      // The user's file as it was; the serve one beside it, valid, with what serve does not read taken out.
      assert.equal(readFileSync(join(ws, 'agent.rft.yaml'), 'utf8'), TRAIN);
      const raw = parse(readFileSync(join(ws, 'agent-serve.rft.yaml'), 'utf8')) as Record<string, never>;
      const { config, issues } = validateRunConfig(raw);
      assert.ok(config, JSON.stringify(issues));
      assert.equal(config!.mode, 'serve');
      assert.equal(config!.placement, 'memory');
      assert.equal((raw.explorer as Record<string, unknown>).tasks_per_step, undefined);

      const shown = await until(
        () => vscode.recorded.messages.find((m) => m.message.startsWith(`Run ${id} serves at ${info!.baseUrl}`)),
        'the serving message',
      );
      assert.deepEqual(shown.items, ['Copy Base URL', 'Copy Token']);
      const token = await until(() => vscode.recorded.clipboard, 'the token copied');
      assert.equal(token, readFileSync(info!.tokenFile, 'utf8').trim());

      // An agent's two-call episode through the real client, with the copied token.
      const client = new OpenAI({ baseURL: info!.baseUrl, apiKey: token, maxRetries: 0 });
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Say yes.' }];
      const a = await client.chat.completions.create({
        model: 'agent-serve',
        messages,
        max_tokens: 4,
        metadata: { episode_id: 'ep-a', task_id: 'q1' },
      });
      messages.push(a.choices[0]!.message as OpenAI.ChatCompletionMessageParam, { role: 'user', content: 'Again.' });
      await client.chat.completions.create({
        model: 'agent-serve',
        messages,
        max_tokens: 4,
        metadata: { episode_id: 'ep-a', task_id: 'q1' },
      });

      // The browser's Served episodes: the waiting episode as a conversation, rated.
      await vscode.commands.executeCommand('rftStudio.openExperienceBrowser');
      const panel = vscode.recorded.panels.at(-1)!;
      panel.webview.received.fire({ kind: 'ready' });
      let n = 100;
      const ask = async <R>(method: string, params: unknown): Promise<R> => {
        const rid = n++;
        panel.webview.received.fire({ kind: 'request', id: rid, method, params });
        const r = (await until(
          () => panel.webview.posted.find((m) => (m as { id?: number }).id === rid),
          method,
          60_000,
        )) as { result?: R; error?: { message: string } };
        if (r.error) throw new Error(r.error.message);
        return r.result!;
      };
      const { runs } = await ask<{ runs: ServingRun[] }>('served', {});
      const run = runs.find((r) => r.runId === id)!;
      assert.ok(run, 'the serve run is listed');
      const ep = run.episodes.find((e) => e.episodeId === 'ep-a')!;
      assert.equal(ep.calls, 2);
      assert.deepEqual(
        ep.messages.map((m) => m.role),
        ['user', 'assistant', 'user', 'assistant'],
      );
      assert.equal(ep.pieces?.length, ep.tokens.length, 'each token has its text');
      assert.ok(ep.mask.includes(1) && ep.mask.includes(0), 'the replies trained, the turn between them masked');

      const first = await ask<ServedRewardResult>('rateEpisode', { runId: id, episodeId: 'ep-a', reward: 1 });
      assert.deepEqual(first, { episodeId: 'ep-a', status: 'accepted', reward: 1 });
      const again = await ask<ServedRewardResult>('rateEpisode', { runId: id, episodeId: 'ep-a', reward: 0 });
      assert.equal(again.status, 'refused');
      assert.equal(again.reason, 'already rewarded');
      const after = await ask<{ runs: ServingRun[] }>('served', {});
      assert.ok(
        !after.runs.find((r) => r.runId === id)!.episodes.some((e) => e.episodeId === 'ep-a'),
        'no longer waiting',
      );
      panel.dispose();
    } finally {
      if (id) await s.client.request('runs/stop', { runId: id }).catch(() => undefined);
      await deactivateFrom(ctx);
    }
  },
);
