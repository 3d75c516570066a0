// Live updates from a run, without starting one: a real run registry and metrics.jsonl written
// the way the coordinator writes them. RunPoller forwards complete points once, in order, holds
// back the newest (possibly half-written) step while the run is running, flushes it when the run
// stops, and reports status changes; toPoints uses the dashboard's chart keys; task stats of a
// real SQLite buffer are computed incrementally; `rft eval` arguments come from the owning run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MetricsPoint, RunInfo } from '../../backend/core/protocol.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import { ProcessRunController } from '../../backend/server/process-run-controller.js';
import { RunPoller, toPoints } from '../../backend/server/run-poller.js';
import { runEngines } from '../../backend/coordinator/monitor.js';
import { TaskStatsIndex } from '../../backend/server/adapters/task-stats.js';
import { CHARTS } from '../../webview/dashboard/protocol.js';
import { experience } from '../../tools/make-buffer.js';
import { WorkspaceRuns } from '../../backend/server/adapters/run-registry.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { countParams } from '../../backend/model/config.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { formatParams } from '../../backend/model/run-model.js';
import { makeHubEntry, TINY_QWEN2 } from '../../tools/hf-model.js';

const line = (file: string, rec: Record<string, unknown>) =>
  appendFileSync(file, JSON.stringify({ t: Date.now(), ...rec }) + '\n');
const trainRec = (step: number) => ({
  kind: 'train',
  stage: 'mix',
  step,
  loss: 1 / (step + 1),
  policy_loss: -0.1,
  sft_loss: 2,
  kl_loss: 0.01,
  tokens_per_s: 100,
  lr: 2e-4,
  update_kl: 9e-4,
  update_kl_target: 1e-3,
  zero_variance_share: 0.25,
});

test('toPoints: the guard signals fill KL and entropy for any algorithm; a warning record rides on its step, typed', () => {
  const pts = toPoints('r', [
    { t: 1, kind: 'train', stage: 'main', step: 11, loss: 1, ref_kl: 1.8, sampled_entropy: 0.06, batch_reward: 0.3 },
    {
      t: 2,
      kind: 'warning',
      code: 'policy_collapse',
      stage: 'main',
      step: 11,
      message: 'policy collapse …',
      values: { ref_kl: 1.8 },
    },
  ]);
  assert.equal(pts.length, 1);
  assert.deepEqual([pts[0]!.values.kl, pts[0]!.values.entropy, pts[0]!.values.batch_reward], [1.8, 0.06, 0.3]);
  assert.deepEqual(pts[0]!.warnings, [
    { code: 'policy_collapse', step: 11, stage: 'main', message: 'policy collapse …', values: { ref_kl: 1.8 } },
  ]);
});

test('toPoints merges a step and fills every dashboard chart key the trainer reports', () => {
  const pts = toPoints('r', [
    { t: 1, kind: 'stage', stage: 'mix' },
    // critic_loss: a PPO step's value loss (issue 25).
    { t: 2, ...trainRec(0), 'usual/entropy': 0.7, critic_loss: 0.3 },
    { t: 3, kind: 'explore', step: 0, reward_mean: 0.25 },
    { t: 4, kind: 'state', step: 0, trainer_idle: 0.4, explorer_idle: 0.6 },
    { t: 5, kind: 'eval', step: 1, accuracy: 0.5 },
  ]);
  assert.equal(pts.length, 2);
  const keys = CHARTS.flatMap((c) => c.keys);
  for (const k of keys.filter((k) => k !== 'eval_accuracy'))
    assert.equal(typeof pts[0]!.values[k], 'number', `step 0 has ${k}`);
  assert.equal(pts[0]!.values['loss/total'], 1);
  assert.equal(pts[0]!.values.kl, 0.01);
  assert.equal(pts[0]!.values['loss/critic'], 0.3);
  assert.deepEqual(
    [pts[0]!.values.lr, pts[0]!.values.update_kl, pts[0]!.values.update_kl_target, pts[0]!.values.zero_variance_share],
    [2e-4, 9e-4, 1e-3, 0.25],
    'the step size chart (lr auto) and the zero-variance share',
  );
  assert.equal(pts[1]!.values.eval_accuracy, 0.5);
});

test('runEngines: the tensor engine each process recorded and the rollout engine of the latest explore step', () => {
  const seg = { t: 0, kind: 'segment' };
  const eng = (component: string, tensor: string) => ({ t: 0, kind: 'engine', component, tensor });
  const explore = (rollout?: unknown) => ({ t: 0, kind: 'explore', step: 0, ...(rollout ? { rollout } : {}) });
  assert.equal(runEngines([seg]), undefined, 'nothing recorded yet');
  assert.deepEqual(runEngines([seg, eng('run', 'wasm + native BLAS'), explore()]), {
    tensor: 'wasm + native BLAS',
    rollout: 'native (in process)',
  });
  // The trainer and explorer processes of a checkpoint-synchronized run: the coordinator's own is left out.
  assert.deepEqual(
    runEngines([
      seg,
      eng('run', 'wasm + native BLAS'),
      eng('trainer', 'webgpu: nvidia hopper (NVIDIA H200)'),
      eng('explorer', 'wasm + native BLAS'),
      explore({ engine: 'llama-cpp', syncs: 1, gpu: 'cuda', gpu_devices: ['NVIDIA H200'] }),
    ]),
    {
      tensor: 'trainer: webgpu: nvidia hopper (NVIDIA H200) · explorer: wasm + native BLAS',
      rollout: 'llama.cpp cuda: NVIDIA H200',
    },
  );
  assert.equal(runEngines([explore({ engine: 'llama-cpp', gpu: false, gpu_devices: [] })])!.rollout, 'llama.cpp cpu');
  assert.equal(
    runEngines([explore({ engine: 'llama-cpp', syncs: 0 })])!.rollout,
    'llama.cpp (its device is known after the first load)',
  );
  assert.equal(runEngines([explore({ workers: 4, jobs: 2 })])!.rollout, 'native (4 worker threads)');
  assert.equal(
    runEngines([
      explore({
        engine: 'auto',
        batches: { native: 3, 'llama-cpp': 5 },
        native: { workers: 2 },
        llama_cpp: { engine: 'llama-cpp', gpu: 'vulkan', gpu_devices: ['AMD Radeon 780M'] },
      }),
    ])!.rollout,
    'auto: native (2 worker threads) 3 batches, llama.cpp vulkan: AMD Radeon 780M 5',
  );
  assert.equal(
    runEngines([explore({ engine: 'auto', batches: { native: 2, 'llama-cpp': 0 }, llama_cpp_unavailable: 'no GGUF' })])!
      .rollout,
    'auto: native (in process) 2 batches, llama.cpp (unavailable: no GGUF) 0',
  );
  // A resume opens a segment: what the run uses since then counts.
  assert.deepEqual(
    runEngines([seg, eng('run', 'cpu (plain JavaScript)'), explore(), seg, eng('run', 'wasm + native BLAS')]),
    {
      tensor: 'wasm + native BLAS',
    },
  );
});

test("runs/status carries the engines from the run's metrics.jsonl (what the dashboard is sent); runs/list does not read them", async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-engines-'));
  const reg = await RunRegistry.open(ws);
  const run = await reg.create({ name: 'gpu', config: {} });
  const file = join(run.dir, 'metrics.jsonl');
  mkdirSync(run.dir, { recursive: true });
  const runs = new WorkspaceRuns(ws);
  assert.equal((await runs.get(run.id))!.engines, undefined, 'no metrics yet');
  line(file, { kind: 'segment', resumed: false });
  line(file, { kind: 'engine', component: 'run', tensor: 'webgpu: google swiftshader (SwiftShader driver 5.0.0)' });
  assert.deepEqual((await runs.get(run.id))!.engines, {
    tensor: 'webgpu: google swiftshader (SwiftShader driver 5.0.0)',
  });
  line(file, {
    kind: 'explore',
    step: 0,
    reward_mean: 0.5,
    rollout: { engine: 'llama-cpp', gpu: 'metal', gpu_devices: ['Apple M3'] },
  });
  assert.deepEqual((await runs.get(run.id))!.engines, {
    tensor: 'webgpu: google swiftshader (SwiftShader driver 5.0.0)',
    rollout: 'llama.cpp metal: Apple M3',
  });
  assert.equal((await runs.list())[0]!.engines, undefined);
});

test('RunPoller: complete points once and in order, the newest held back until the run stops; status changes', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-live-'));
  const reg = await RunRegistry.open(ws);
  const run = await reg.create({ name: 'live', config: {} });
  mkdirSync(run.dir, { recursive: true });
  const file = join(run.dir, 'metrics.jsonl');
  const poller = new RunPoller(() => RunRegistry.open(ws), 60_000);
  const got: MetricsPoint[] = [];
  const status: RunInfo[] = [];
  const lastStatus = (): RunInfo => status[status.length - 1]!;
  const sub = poller.subscribe({ metrics: (m) => got.push(m), status: (r) => status.push(r) });
  try {
    await poller.tick();
    assert.equal(status.length, 0, 'a run seen for the first time, not running: no news');
    await reg.setStatus(run.id, 'running');
    line(file, trainRec(0));
    line(file, { kind: 'explore', step: 1, reward_mean: 0.5 }); // step 1 has begun: step 0 is complete
    await poller.tick();
    assert.deepEqual(
      got.map((p) => p.step),
      [0],
    );
    assert.equal(lastStatus().status, 'running');
    // One trainer step done (the explorer's step 1 has begun: it is no step done).
    assert.equal(lastStatus().step, 1, 'live step from the metrics');
    assert.equal(lastStatus().reward, 0.5);
    await poller.tick();
    assert.deepEqual(
      got.map((p) => p.step),
      [0],
      'nothing sent twice',
    );
    line(file, trainRec(1));
    await poller.tick();
    assert.deepEqual(
      got.map((p) => p.step),
      [0],
      'step 1 is the newest: held back',
    );
    await reg.setStatus(run.id, 'stopped');
    await poller.tick();
    assert.deepEqual(
      got.map((p) => p.step),
      [0, 1],
      'flushed when the run stops',
    );
    assert.equal(got[1]!.values.reward, 0.5);
    assert.equal(got[1]!.values['loss/total'], 0.5);
    assert.equal(lastStatus().status, 'stopped');
    const n = status.length;
    await poller.tick();
    assert.equal(status.length, n, 'no change, no notification');
  } finally {
    sub.dispose();
  }
});

test('RunPoller: the live step is the trainer steps done; the final eval at step 50 does not make it 51', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-live-'));
  const reg = await RunRegistry.open(ws);
  const run = await reg.create({ name: 'fifty', config: {} });
  mkdirSync(run.dir, { recursive: true });
  const file = join(run.dir, 'metrics.jsonl');
  const poller = new RunPoller(() => RunRegistry.open(ws), 60_000);
  const status: RunInfo[] = [];
  const sub = poller.subscribe({ status: (r) => status.push(r) });
  try {
    await reg.setStatus(run.id, 'running');
    // As the step loop writes them: step 49 (0-based) leaves model version 50, the eval after it is at 50.
    line(file, { ...trainRec(48), model_version: 49 });
    line(file, { kind: 'explore', step: 49, reward_mean: 0.5 });
    line(file, { ...trainRec(49), model_version: 50 });
    line(file, { kind: 'eval', step: 50, accuracy: 0.5 });
    await poller.tick();
    assert.equal(status.at(-1)!.step, 50);
    assert.equal(toPoints(run.id, [{ t: 0, kind: 'train', step: 49, model_version: 50 }])[0]!.trained, 50);
    await reg.setLastStep(run.id, 50);
    await reg.setStatus(run.id, 'completed');
    await poller.tick();
    assert.equal(status.at(-1)!.status, 'completed');
    assert.equal(status.at(-1)!.step, 50, 'completed · step 50 for steps: 50');
  } finally {
    sub.dispose();
  }
});

test('RunPoller: a running run whose newest checkpoint replaces a pruned one (same count, same step) is news', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-live-'));
  const reg = await RunRegistry.open(ws);
  const run = await reg.create({ name: 'ck', config: {} });
  mkdirSync(run.dir, { recursive: true });
  const poller = new RunPoller(() => RunRegistry.open(ws), 60_000);
  const status: RunInfo[] = [];
  const sub = poller.subscribe({ status: (r) => status.push(r) });
  const ck = (v: number) => ({ version: v, path: join(run.dir, 'checkpoints', `v${v}`), step: v });
  try {
    await reg.setStatus(run.id, 'running');
    await reg.addCheckpoint(run.id, ck(0));
    await reg.addCheckpoint(run.id, ck(1));
    await poller.tick();
    // The registry's lastStep stays put (as a live step from metrics would hold it): only the list changes.
    await reg.setLastStep(run.id, 1);
    await reg.addCheckpoint(run.id, { ...ck(2), step: 1 }, [1]);
    const n = status.length;
    await poller.tick();
    assert.equal(status.length, n + 1, 'the new checkpoint is told');
    assert.deepEqual(
      status.at(-1)!.checkpoints?.map((c) => c.version),
      [0, 2],
    );
  } finally {
    sub.dispose();
  }
});

test('TaskStatsIndex: usual ok train rollouts per task and run, incrementally', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-ts-'));
  const store = new SqliteStore(join(dir, 'buffer.db'));
  try {
    const mk = (i: number, o: Parameters<typeof experience>[1]) => experience(i, { runId: 'r', taskId: 'a', ...o });
    await store.appendExperiences([
      mk(0, { reward: 1 }),
      mk(1, { reward: 0.5 }),
      mk(2, { reward: 0, status: 'infra_failure' }),
      mk(3, { reward: 1, source: 'expert' }),
      mk(4, { reward: 1, split: 'eval' }),
      mk(5, { reward: 0.25, taskId: 'b' }),
      mk(6, { reward: 1, runId: 'other' }),
    ]);
    const idx = new TaskStatsIndex(store);
    assert.deepEqual(await idx.stats('r'), [
      { taskId: 'a', rollouts: 2, meanReward: 0.75, passRate: 0.5 },
      { taskId: 'b', rollouts: 1, meanReward: 0.25, passRate: 0 },
    ]);
    await store.appendExperiences([mk(7, { reward: 1, taskId: 'b' })]);
    assert.deepEqual(
      (await idx.stats('r')).find((s) => s.taskId === 'b'),
      { taskId: 'b', rollouts: 2, meanReward: 0.625, passRate: 0.5 },
    );
    assert.equal((await idx.stats()).find((s) => s.taskId === 'a')!.rollouts, 3, 'all runs');
  } finally {
    await store.close();
  }
});

test('evaluate: the owning run supplies the held-out split, reward and answer length', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-evargs-'));
  const reg = await RunRegistry.open(ws);
  const cfg = {
    taskset: { builtin: 'reverse', seed: 0 },
    eval: { builtin: 'reverse', size: 16, seed: 3 },
    workflow: { reward: 'exact_match' },
    explorer: { eval_sampling: { max_new_tokens: 8 } },
  };
  const run = await reg.create({ name: 'ev', config: cfg });
  const ck = join(run.dir, 'checkpoints', 'v3');
  mkdirSync(ck, { recursive: true });
  const c = new ProcessRunController(ws);
  assert.deepEqual(await c.evalArgs(ck, ''), [
    ck,
    '--taskset',
    'builtin:reverse',
    '--size',
    '16',
    '--seed',
    '3',
    '--reward',
    'exact_match',
    '--max-new-tokens',
    '8',
  ]);
  assert.deepEqual(await c.evalArgs(ck, 'tasksets/x.jsonl'), [
    ck,
    '--taskset',
    join(ws, 'tasksets/x.jsonl'),
    '--reward',
    'exact_match',
    '--max-new-tokens',
    '8',
  ]);
  await assert.rejects(c.evalArgs(join(ws, 'missing'), ''), /not found/);
  const loose = join(ws, 'loose');
  mkdirSync(loose);
  await assert.rejects(c.evalArgs(loose, ''), /field 'taskset'|taskset/);
  // A share held out of the taskset: only the run's config picks the same tasks (never the whole taskset it trained on).
  const held = await reg.create({
    name: 'held',
    config: {
      taskset: { path: 'tasksets/t.jsonl' },
      eval: { holdout: 0.1, seed: 0 },
      workflow: { reward: 'exact_match' },
      explorer: { eval_sampling: { max_new_tokens: 8 } },
    },
  });
  const hck = join(held.dir, 'checkpoints', 'v1');
  mkdirSync(hck, { recursive: true });
  writeFileSync(join(held.dir, 'config.yaml'), 'taskset: {path: tasksets/t.jsonl}\n');
  assert.deepEqual(await c.evalArgs(hck, ''), [hck, '--config', join(held.dir, 'config.yaml')]);
  // A file picked for a run's checkpoint is read as the run read its files (format mapping), with its reward.
  assert.deepEqual(await c.evalArgs(hck, 'tasksets/x.jsonl'), [
    hck,
    '--config',
    join(held.dir, 'config.yaml'),
    '--taskset',
    join(ws, 'tasksets/x.jsonl'),
  ]);
  // A folder of no run (an exported HF folder): a workspace config gives the eval set or the file's mapping, and the reward.
  writeFileSync(join(ws, 'train.rft.yaml'), 'taskset: {path: tasksets/t.jsonl}\n');
  assert.deepEqual(await c.evalArgs(loose, '', { config: 'train.rft.yaml' }), [
    loose,
    '--config',
    join(ws, 'train.rft.yaml'),
  ]);
  assert.deepEqual(await c.evalArgs(loose, 'tasksets/x.jsonl', { config: 'train.rft.yaml' }), [
    loose,
    '--config',
    join(ws, 'train.rft.yaml'),
    '--taskset',
    join(ws, 'tasksets/x.jsonl'),
  ]);
  // A file no section names, with its own mapping (issue 40 item 4): passed on; not for the eval set.
  assert.deepEqual(
    await c.evalArgs(loose, 'tasksets/x.csv', { config: 'train.rft.yaml', format: { prompt_key: 'question' } }),
    [
      loose,
      '--config',
      join(ws, 'train.rft.yaml'),
      '--taskset',
      join(ws, 'tasksets/x.csv'),
      '--format',
      '{"prompt_key":"question"}',
    ],
  );
  assert.deepEqual(await c.evalArgs(loose, '', { config: 'train.rft.yaml', format: {} }), [
    loose,
    '--config',
    join(ws, 'train.rft.yaml'),
  ]);
  await assert.rejects(c.evalArgs(loose, '', { config: 'nope.rft.yaml' }), /config 'nope.rft.yaml' not found/);
  await assert.rejects(c.evalArgs(loose, ''), /belongs to no run of this workspace.*workspace config/);
});

test('runs/list and runs/status name the model a run trains: a model.checkpoint by its own config.json (architecture, parameters, LoRA rank, hub name), not the preset defaults', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-runmodel-'));
  const snap = makeHubEntry(join(ws, 'hub'), 'acme/tiny-qwen2', 'abc123', TINY_QWEN2).snapshot;
  const reg = await RunRegistry.open(ws);
  // As the registry keeps it: validated, so model.size and tokenizer.kind carry their (unread) defaults.
  const { config } = validateRunConfig({
    model: { checkpoint: snap, lora: { rank: 4 } },
    taskset: { builtin: 'reverse' },
    workflow: { reward: 'exact_match' },
  });
  const qwen = await reg.create({ name: 'qwen', config });
  const preset = await reg.create({
    name: 'preset',
    config: validateRunConfig({ taskset: { builtin: 'reverse' }, workflow: { reward: 'exact_match' } }).config,
  });
  const runs = new WorkspaceRuns(ws);
  const m = (await runs.get(qwen.id))!.model!;
  const params = countParams(loadCheckpoint(snap).model.config);
  assert.deepEqual(
    { ...m, label: undefined },
    {
      source: 'checkpoint',
      architecture: 'Qwen2ForCausalLM',
      parameters: params,
      hidden: 32,
      loraRank: 4,
      from: 'acme/tiny-qwen2',
      tokenizer: "the model's own",
      label: undefined,
    },
  );
  assert.equal(m.label, `Qwen2ForCausalLM · ${formatParams(params)} parameters · LoRA rank 4 · from acme/tiny-qwen2`);
  const list = await runs.list();
  assert.equal(list.find((r) => r.id === qwen.id)!.model!.label, m.label);
  assert.equal(
    list.find((r) => r.id === preset.id)!.model!.label,
    'preset tiny-0.4m · full fine-tuning · char (trained on the tasksets) tokenizer',
  );
});
