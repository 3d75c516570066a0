// `mode: serve` end to end: `runJob` serves the run's policy, the real `openai` client plays the
// agent (two calls per episode, rewards posted), the trainer trains a step per batch of rewarded
// episodes, and the served version moves (system_fingerprint v0 -> v1 -> v2) with no request failing.
// The config's serve section is read only in mode serve; a distributed run refuses mode serve.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { parse as parseYaml } from 'yaml';
import { validateRunConfig } from '../../../backend/core/config.js';
import { checkDistributedConfig } from '../../../backend/coordinator/distributed/setup.js';
import { loadRunConfig } from '../../../backend/coordinator/load-config.js';
import { runJob } from '../../../backend/coordinator/run.js';
import { openStore } from '../../../backend/buffer/storage/index.js';
import { initEngine } from '../../../backend/model/engine.js';
import { makeHfModel } from '../../../tools/hf-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-serve-run-'));
after(() => rmSync(root, { recursive: true, force: true }));

const CONFIG = `name: served
seed: 1
mode: serve
placement: memory
model: { checkpoint: model }
taskset: { path: tasks.jsonl }
eval: { path: tasks.jsonl }
workflow: { reward: exact_match }
algorithm: { name: grpo }
explorer: { repeat_times: 2, eval_sampling: { max_new_tokens: 3 } }
trainer: { batch_size: 2, steps: 2, lr: 0.01 }
buffer: { storage: sqlite }
serve: { limits: { max_tokens: 6 }, reward_timeout_seconds: 3600 }
`;

test('a serve run trains on rewarded episodes and serves each new version between requests', async () => {
  const dir = join(root, 'run');
  mkdirSync(dir);
  makeHfModel(join(dir, 'model'), {
    architecture: 'Qwen2ForCausalLM',
    tokenizer: 'qwen3',
    hidden: 16,
    layers: 1,
    heads: 2,
    kvHeads: 1,
    intermediate: 24,
    tied: true,
    seed: 3,
  });
  writeFileSync(join(dir, 'tasks.jsonl'), '{"id": "q1", "prompt": "Say yes.", "answer": "yes", "domain": "text"}\n');
  writeFileSync(join(dir, 'config.yaml'), CONFIG);
  const cfg = loadRunConfig(join(dir, 'config.yaml'));
  const done = runJob({ config: cfg, configPath: join(dir, 'config.yaml'), workspace: join(root, 'ws'), runId: 'srv' });
  const runDir = join(root, 'ws', '.rft', 'runs', 'srv');
  const info = join(runDir, 'serve.json');
  // The run prints its base URL when it is ready; serve.json holds it and the token file.
  while (!existsSync(info)) await new Promise((r) => setTimeout(r, 100));
  const { base_url, token_file } = JSON.parse(readFileSync(info, 'utf8'));
  assert.match(base_url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  const client = new OpenAI({ baseURL: base_url, apiKey: readFileSync(token_file, 'utf8').trim(), maxRetries: 0 });
  await assert.rejects(
    new OpenAI({ baseURL: base_url, apiKey: 'x', maxRetries: 0 }).models.list(),
    OpenAI.AuthenticationError,
  );

  const seen: string[] = [];
  let n = 0;
  // One trainer step per two rewarded episodes of the task (a GRPO group of repeat_times 2).
  const episode = async (reward: number) => {
    const id = `e${n++}`;
    const m1: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Say yes.' }];
    const a = await client.chat.completions.create({
      model: 'served',
      messages: m1,
      metadata: { episode_id: id, task_id: 'q1' },
    });
    const b = await client.chat.completions.create({
      model: 'served',
      messages: [
        ...m1,
        a.choices[0]!.message as OpenAI.ChatCompletionMessageParam,
        { role: 'user', content: 'Again.' },
      ],
      metadata: { episode_id: id },
    });
    seen.push(a.system_fingerprint!, b.system_fingerprint!);
    const r = (await client.post('/rft/rewards', { body: { rewards: [{ episode_id: id, reward }] } })) as {
      accepted: number;
    };
    assert.equal(r.accepted, 1);
  };
  const servedVersion = async () =>
    (
      await client.chat.completions.create({
        model: 'served',
        messages: [{ role: 'user', content: 'v?' }],
        max_tokens: 1,
      })
    ).system_fingerprint;
  await episode(1);
  await episode(0);
  // The step trains once the group is in the buffer; a request then waits for it and gets v1.
  let v = await servedVersion();
  while (v === 'v0') v = await servedVersion();
  assert.equal(v, 'v1');
  await episode(0);
  await episode(1);
  const summary = await done;
  assert.equal(summary.trainer_steps, 2);
  assert.deepEqual(seen.slice(0, 4), ['v0', 'v0', 'v0', 'v0']);
  assert.deepEqual(seen.slice(4), ['v1', 'v1', 'v1', 'v1']);
  assert.ok(existsSync(join(summary.checkpoint, 'model.safetensors')) || existsSync(summary.checkpoint));
  assert.equal(typeof summary.final_accuracy, 'number');
  const store = await openStore(join(runDir, 'buffer.db'));
  const rows = await store.list({ runId: 'srv', taskId: 'q1' });
  await store.close();
  assert.equal(rows.length, 4);
  for (const e of rows) {
    assert.equal(e.metadata!.calls, 2);
    assert.ok(
      e.advantages?.some((x) => x !== 0),
      'group advantages of rewards 1 and 0',
    );
  }
  const metrics = readFileSync(join(runDir, 'metrics.jsonl'), 'utf8');
  assert.match(metrics, /"kind":"serve","base_url"/);
});

test('a stop (rft stop: the run signal) ends a serve run waiting for rewards, with its summary and checkpoint', async () => {
  const dir = join(root, 'stop');
  mkdirSync(dir);
  makeHfModel(join(dir, 'model'), {
    architecture: 'Qwen2ForCausalLM',
    tokenizer: 'qwen3',
    hidden: 16,
    layers: 1,
    heads: 2,
    kvHeads: 1,
    intermediate: 24,
    tied: true,
    seed: 4,
  });
  writeFileSync(join(dir, 'tasks.jsonl'), '{"id": "q1", "prompt": "Say yes.", "answer": "yes", "domain": "text"}\n');
  writeFileSync(join(dir, 'token'), 'my-own-token\n');
  writeFileSync(join(dir, 'config.yaml'), `${CONFIG}`.replace('serve: {', 'serve: { token_file: token,'));
  const stop = new AbortController();
  const done = runJob({
    config: loadRunConfig(join(dir, 'config.yaml')),
    configPath: join(dir, 'config.yaml'),
    workspace: join(root, 'ws2'),
    runId: 'stopped',
    signal: stop.signal,
  });
  const info = join(root, 'ws2', '.rft', 'runs', 'stopped', 'serve.json');
  while (!existsSync(info)) await new Promise((r) => setTimeout(r, 100));
  const { base_url, token_file } = JSON.parse(readFileSync(info, 'utf8'));
  assert.equal(token_file, join(dir, 'token'));
  const client = new OpenAI({ baseURL: base_url, apiKey: 'my-own-token', maxRetries: 0 });
  const a = await client.chat.completions.create({ model: 'served', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(a.system_fingerprint, 'v0');
  stop.abort();
  const s = await done;
  assert.equal(s.trainer_steps, 0);
  assert.ok(existsSync(s.checkpoint), s.checkpoint);
  // The server is closed with the run.
  await assert.rejects(client.models.list(), OpenAI.APIConnectionError);
});

test('the serve section is read in mode serve only; mode serve runs with placement memory or checkpoint, not distributed', () => {
  const cfg = parseYaml(CONFIG);
  assert.equal(validateRunConfig(cfg).issues.length, 0, JSON.stringify(validateRunConfig(cfg).issues));
  const both = validateRunConfig({ ...cfg, mode: 'both' }).issues;
  assert.ok(
    both.some((i) => i.path === 'serve' && /read in mode serve only/.test(i.message)),
    JSON.stringify(both),
  );
  const ck = validateRunConfig({ ...cfg, placement: 'checkpoint' });
  assert.equal(ck.issues.length, 0, JSON.stringify(ck.issues));
  assert.match(
    checkDistributedConfig(ck.config!) ?? '',
    /mode: serve runs with `rft run` and placement: memory or placement: checkpoint/,
  );
  const remote = validateRunConfig({ ...cfg, serve: { host: '0.0.0.0' } }).issues;
  assert.ok(remote.some((i) => i.path === 'serve.host' && /allow_remote/.test(i.message)));
  assert.equal(validateRunConfig({ ...cfg, serve: { host: '0.0.0.0', allow_remote: true } }).issues.length, 0);
  const sampling = validateRunConfig({ ...cfg, explorer: { repeat_times: 2, sampling: { max_new_tokens: 9 } } }).issues;
  assert.ok(sampling.some((i) => i.path === 'explorer.sampling.max_new_tokens'));
  const unknown = validateRunConfig({ ...cfg, serve: { prot: 1 } }).issues;
  assert.ok(unknown.some((i) => /prot/.test(i.message) || i.path.startsWith('serve')));
});
