// The served model learns from an agent's rewards: a tiny agent loop through the real `openai` client
// (the last-letter task of tools/pretrained-model.ts, rewarded by the agent itself: 1 when the
// reply is the right letter) against a mode serve run of a partly-trained model (LoRA, GRPO). The
// run's held-out greedy accuracy and the agent's own reward both rise.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { loadRunConfig } from '../../../backend/coordinator/load-config.js';
import { runJob } from '../../../backend/coordinator/run.js';
import { initEngine } from '../../../backend/model/engine.js';
import { lastLetterTasks, makePretrainedModel, writeLastLetterTasks } from '../../../tools/pretrained-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-serve-learning-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('an agent rewarding its own answers through the endpoint improves the served model', async (t) => {
  const pretrained = await makePretrainedModel(join(root, 'model'));
  const files = writeLastLetterTasks(join(root, 'data'));
  const config = join(root, 'serve.rft.yaml');
  writeFileSync(
    config,
    `name: letters\nseed: 1\nmode: serve\nplacement: memory\nmodel:\n  checkpoint: ${JSON.stringify(pretrained.dir)}\n  lora: { rank: 8, alpha: 16 }\n` +
      `taskset:\n  path: ${JSON.stringify(files.train)}\neval:\n  path: ${JSON.stringify(files.eval)}\n` +
      `workflow: { reward: exact_match }\nalgorithm: { name: grpo }\n` +
      `explorer:\n  repeat_times: 8\n  eval_sampling: { max_new_tokens: 3 }\n` +
      `trainer:\n  batch_size: 64\n  steps: 40\nmonitor: { report: false }\nserve: { limits: { max_tokens: 3 } }\n`,
  );
  let finished = false;
  const done = runJob({
    config: loadRunConfig(config),
    configPath: config,
    workspace: join(root, 'ws'),
    runId: 'letters',
  });
  done.finally(() => (finished = true)).catch(() => {});
  const info = join(root, 'ws', '.rft', 'runs', 'letters', 'serve.json');
  while (!existsSync(info) && !finished) await new Promise((r) => setTimeout(r, 100));
  if (!existsSync(info)) await done;
  const { base_url, token_file } = JSON.parse(readFileSync(info, 'utf8'));
  const client = new OpenAI({ baseURL: base_url, apiKey: readFileSync(token_file, 'utf8').trim(), maxRetries: 0 });

  const tasks = lastLetterTasks().train;
  const rounds: number[] = [];
  let episode = 0;
  // Each round: 8 tasks x 8 episodes (one GRPO group per task), rewarded by the agent.
  for (let round = 0; !finished; round++) {
    const picked = Array.from({ length: 8 }, (_, i) => tasks[(round * 8 + i) % tasks.length]!);
    let results: { id: string; reward: number }[];
    try {
      results = await Promise.all(
        picked.flatMap((task) =>
          Array.from({ length: 8 }, async () => {
            const id = `ep${episode++}`;
            const r = await client.chat.completions.create({
              model: 'letters',
              messages: [{ role: 'user', content: task.prompt }],
              max_tokens: 3,
              temperature: 1,
              metadata: { episode_id: id, task_id: task.id },
            });
            return { id, reward: (r.choices[0]!.message.content ?? '').trim() === task.answer ? 1 : 0 };
          }),
        ),
      );
      await client.post('/rft/rewards', {
        body: { rewards: results.map((x) => ({ episode_id: x.id, reward: x.reward })) },
      });
    } catch (e) {
      // The run ended (40 steps trained) while this round was under way: the server is gone.
      if (finished || e instanceof OpenAI.APIConnectionError) break;
      throw e;
    }
    rounds.push(results.reduce((s, x) => s + x.reward, 0) / results.length);
  }
  const s = await done;
  const first = rounds.slice(0, 3).reduce((a, b) => a + b, 0) / 3;
  const last = rounds.slice(-3).reduce((a, b) => a + b, 0) / 3;
  t.diagnostic(
    `held-out greedy accuracy ${s.base_accuracy} -> ${s.final_accuracy}; agent reward ${first.toFixed(3)} (first 3 rounds) -> ${last.toFixed(3)} (last 3); ${episode} episodes, ${s.trainer_steps} steps`,
  );
  assert.equal(s.trainer_steps, 40);
  assert.ok(s.final_accuracy! >= s.base_accuracy! + 0.15, `${s.base_accuracy} -> ${s.final_accuracy}`);
  assert.ok(last > first, `agent reward ${first} -> ${last}`);
});
