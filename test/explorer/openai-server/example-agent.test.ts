// The example agent (examples/agent/agent.ts, issue 43 item 8), imported unchanged, improves a small
// pretrained model through a serve run's endpoint. The model (test/helpers/tool-model.ts) answers
// calculator questions through the tool with a Qwen-style template, but greedily skips the tool on
// sums and guesses (wrong). The agent asks each question with the calculator offered (the tool loop:
// the model's call, the tool's output, the model's answer), rewards its own episodes (1 when the
// answer is right) through POST /v1/rft/rewards, and the run trains (GRPO) on them. Its held-out
// greedy accuracy, measured by the agent itself before and after, rises.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { loadRunConfig } from '../../../backend/coordinator/load-config.js';
import { runJob } from '../../../backend/coordinator/run.js';
import { initEngine } from '../../../backend/model/engine.js';
import { makeToolModel, toolTasks, type ToolTask } from '../../helpers/tool-model.js';
import { postReward, runAgent } from '../../../examples/agent/agent.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-example-agent-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** Trainer steps the agent's rewards train before the accuracy is measured again. */
const STEPS = 12;
const GROUP = 8;
const TASKS_PER_ROUND = 4;

test(
  'the example agent, unchanged, improves a pretrained model through the endpoint',
  { timeout: 2_400_000 },
  async (t) => {
    const tasks = toolTasks();
    // Pretrained until it copies the expression and the tool's output (1000 SFT steps, about 2 min of CPU).
    const model = await makeToolModel(join(root, 'model'), { steps: 1000, lr: 0.005 });
    const line = (x: ToolTask) => JSON.stringify({ id: x.id, prompt: x.question, answer: x.answer, domain: 'math' });
    writeFileSync(join(root, 'eval.jsonl'), `${tasks.eval.map(line).join('\n')}\n`);
    const config = join(root, 'agent.rft.yaml');
    writeFileSync(
      config,
      `name: calc\nseed: 1\nmode: serve\nplacement: memory\nmodel: { checkpoint: ${JSON.stringify(model)} }\n` +
        `taskset: { path: eval.jsonl }\neval: { path: eval.jsonl }\nworkflow: { reward: exact_match }\nalgorithm: { name: grpo }\n` +
        `explorer: { repeat_times: ${GROUP}, eval_sampling: { max_new_tokens: 4 } }\n` +
        `trainer: { batch_size: ${GROUP * TASKS_PER_ROUND}, steps: ${STEPS + 1000}, lr: 0.001, warmup_steps: 0 }\n` +
        `monitor: { report: false }\nserve: { limits: { max_tokens: 96 }, reward_timeout_seconds: 3600 }\n`,
    );
    const stop = new AbortController();
    let finished = false;
    const done = runJob({
      config: loadRunConfig(config),
      configPath: config,
      workspace: join(root, 'ws'),
      runId: 'calc',
      signal: stop.signal,
    });
    done.finally(() => (finished = true)).catch(() => {});
    const info = join(root, 'ws', '.rft', 'runs', 'calc', 'serve.json');
    while (!existsSync(info) && !finished) await new Promise((r) => setTimeout(r, 100));
    if (!existsSync(info)) await done;
    const { base_url, token_file } = JSON.parse(readFileSync(info, 'utf8'));
    const client = new OpenAI({ baseURL: base_url, apiKey: readFileSync(token_file, 'utf8').trim(), maxRetries: 0 });
    // Two model calls at most (the tool call, the answer): an episode stays within the model's context.
    const opts = { model: 'calc', maxTokens: 96, maxTurns: 2 };

    // Held-out accuracy of the agent, greedy (its episodes are never rewarded, so never trained).
    let n = 0;
    const accuracy = async () => {
      const rs = await Promise.all(
        tasks.eval.map((x) => runAgent(client, x.question, { ...opts, temperature: 0, episodeId: `eval-${n++}` })),
      );
      const tools = rs.filter((r) => r.toolCalls > 0).length / rs.length;
      return { acc: rs.filter((r, i) => r.answer === tasks.eval[i]!.answer).length / rs.length, tools };
    };
    const before = await accuracy();

    let episodes = 0;
    let version = 0;
    let refused = 0;
    for (let round = 0; version < STEPS; round++) {
      const picked = Array.from(
        { length: TASKS_PER_ROUND },
        (_, i) => tasks.train[(round * 7 + i * 31) % tasks.train.length]!,
      );
      await Promise.all(
        picked.flatMap((x) =>
          Array.from({ length: GROUP }, async () => {
            const episodeId = `ep${episodes++}`;
            const r = await runAgent(client, x.question, { ...opts, episodeId, taskId: x.id });
            version = Math.max(version, Number(r.version?.slice(1) ?? 0));
            const answer = await postReward(client, episodeId, r.answer === x.answer ? 1 : 0);
            if (answer.status !== 'accepted') refused++;
          }),
        ),
      );
    }
    const afterAcc = await accuracy();
    stop.abort();
    const s = await done;
    t.diagnostic(
      `agent held-out accuracy ${before.acc.toFixed(3)} -> ${afterAcc.acc.toFixed(3)} (tool used on ${before.tools.toFixed(2)} -> ${afterAcc.tools.toFixed(2)} of the questions); ` +
        `${episodes} rewarded episodes, ${s.trainer_steps} trainer steps; run eval ${s.base_accuracy} -> ${s.final_accuracy}`,
    );
    assert.equal(refused, 0, 'every reward accepted');
    assert.ok(s.trainer_steps >= STEPS, `${s.trainer_steps} steps`);
    assert.ok(afterAcc.acc >= before.acc + 0.2, `agent accuracy ${before.acc} -> ${afterAcc.acc}`);
  },
);
