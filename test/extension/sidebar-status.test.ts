// The small things a person reads: the status bar says step, progress and what the number is;
// counts are written one way everywhere; Runs and the dashboard agree on the step; Validate Taskset
// on a non-taskset file says so instead of leaving a problem; the config reads as YAML; the Workers
// view is there only for a scale-out setup.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import YAML from 'yaml';
import { PACKAGE, vscode } from '../../tools/fake-vscode/harness.js';
import type { RunInfo } from '../../backend/core/protocol.js';

const { statusText } = await import('../../src/status-bar.js');
const { BufferTree } = await import('../../src/views/buffer-tree.js');
const { StudioState } = await import('../../src/state.js');
const { validateTaskset } = await import('../../src/commands/taskset.js');
const { configYaml } = await import('../../src/webviews/dashboard.js');

test('status bar: the run, its steps out of the total and the reward, named; progress in the tooltip', () => {
  const run: RunInfo = { id: 'r1', name: 'tiny', status: 'running', step: 90, totalSteps: 200, reward: 0.125 };
  const s = statusText('running', { activeRun: run, counts: undefined });
  assert.equal(s.text, '$(sync~spin) tiny · 90/200 steps · reward 0.13');
  assert.equal(
    s.tooltip,
    'Run tiny (r1): running, step 90 of 200 (45%), mean rollout reward 0.125. Click to open the dashboard.',
  );
  assert.equal(
    statusText('running', { activeRun: { id: 'r2', status: 'paused', step: 3 }, counts: undefined }).text,
    '$(debug-pause) r2 · step 3',
  );
  assert.equal(
    statusText('running', {
      activeRun: undefined,
      counts: { usual: 3360, expert: 1, taskset: 8, rejected: 0, infraFailure: 0 },
    }).tooltip,
    'Buffer: 3,360 usual, 1 expert',
  );
});

test('status bar: the engine in the tooltip; the GPU named in the text where it is used, or missing', () => {
  const counts = { usual: 1, expert: 0, taskset: 0, rejected: 0, infraFailure: 0 };
  const cpu = statusText('running', {
    activeRun: undefined,
    counts,
    engine: {
      requested: 'auto',
      engine: 'cpu',
      ok: true,
      detail: 'CPU: WebAssembly with native BLAS (OpenBLAS SkylakeX)',
    },
  });
  assert.equal(cpu.text, '$(beaker) RFT');
  assert.equal(
    cpu.tooltip,
    'Buffer: 1 usual, 0 expert\nEngine: cpu - CPU: WebAssembly with native BLAS (OpenBLAS SkylakeX)',
  );
  const gpu = statusText('running', {
    activeRun: undefined,
    counts,
    engine: {
      requested: 'webgpu',
      engine: 'webgpu',
      ok: true,
      adapter: 'nvidia hopper (NVIDIA H200)',
      fallback: false,
      detail: 'GPU adapter nvidia hopper (NVIDIA H200)',
    },
  });
  assert.equal(gpu.text, '$(beaker) RFT · GPU');
  assert.match(
    gpu.tooltip,
    /Engine: webgpu \(rftStudio.engine \/ RFT_BACKEND: webgpu\) - GPU adapter nvidia hopper \(NVIDIA H200\)$/,
  );
  const none = statusText('running', {
    activeRun: undefined,
    counts,
    engine: { requested: 'webgpu', engine: 'webgpu', ok: false, detail: 'no GPU adapter: Dawn found no GPU adapter' },
  });
  assert.equal(none.text, '$(beaker) RFT · $(warning) no GPU');
  const emulated = statusText('running', {
    activeRun: undefined,
    counts,
    engine: { requested: 'webgpu', engine: 'webgpu', ok: true, fallback: true, detail: 'GPU adapter SwiftShader' },
  });
  assert.equal(emulated.text, '$(beaker) RFT · GPU (emulated)');
});

test('buffer counts with grouped digits, as the experience browser writes them', async () => {
  const state = {
    counts: { usual: 3360, expert: 1, taskset: 12000, rejected: 0, infraFailure: 0 },
    onDidChange: () => ({ dispose() {} }),
  };
  const tree = new BufferTree(state as never);
  assert.deepEqual(
    tree.getChildren().map((n) => tree.getTreeItem(n).description),
    ['3,360', '1', '12,000'],
  );
});

test("a runs/list answer older than the live status does not move a running run's step back", async () => {
  const handlers = new Map<string, (x: unknown) => void>();
  let list: RunInfo[] = [{ id: 'r1', status: 'running', step: 40 }];
  const client = {
    onNotification: (m: string, f: (x: unknown) => void) => (handlers.set(m, f), { dispose() {} }),
    onStarted: () => ({ dispose() {} }),
    request: async () => list,
  };
  const state = new StudioState(client as never);
  await state.refreshRuns();
  handlers.get('run/status')!({ id: 'r1', status: 'running', step: 57, reward: 0.4 });
  assert.equal(state.runs[0]!.step, 57);
  await state.refreshRuns();
  assert.equal(state.runs[0]!.step, 57, 'the registry still says 40');
  list = [{ id: 'r1', status: 'failed', step: 40 }];
  await state.refreshRuns();
  assert.deepEqual(
    state.runs[0],
    { id: 'r1', status: 'failed', step: 57, reward: 0.4 },
    'failed at the step it reached',
  );
  list = [{ id: 'r1', status: 'completed', step: 60 }];
  await state.refreshRuns();
  assert.deepEqual(state.runs[0], { id: 'r1', status: 'completed', step: 60 });
  list = [{ id: 'r1', status: 'running', step: 10 }];
  await state.refreshRuns();
  assert.equal(state.runs[0]!.step, 10, 'a resumed run starts from its registry step again');
  state.dispose();
});

test('Validate Taskset on a .py file: a warning, no request, no problem left behind', async () => {
  vscode.resetFake();
  const requests: string[] = [];
  const deleted: string[] = [];
  const client = { request: async (m: string) => (requests.push(m), { file: '', tasks: 0, issues: [] }) };
  const s = {
    client,
    // Validation goes through the diagnostics (which read the file as Problems does).
    diagnostics: {
      collection: { delete: (u: { fsPath: string }) => deleted.push(u.fsPath) },
      apply() {},
      validateFile: () => client.request('taskset/validate'),
    },
    output: { warn() {}, error() {}, info() {} },
  };
  await validateTaskset(s as never, vscode.Uri.file('/w/tasksets/solve.py') as never);
  assert.deepEqual(requests, []);
  assert.deepEqual(deleted, ['/w/tasksets/solve.py']);
  assert.equal(vscode.recorded.messages[0]!.kind, 'warning');
  assert.match(
    vscode.recorded.messages[0]!.message,
    /solve\.py is not a taskset file: tasksets are \.jsonl, \.ndjson, \.json, \.yaml, \.yml, \.csv, \.parquet, \.arrow, \.feather, \.ipc\./,
  );
  await validateTaskset(s as never, vscode.Uri.file('/w/tasksets/math.jsonl') as never);
  assert.deepEqual(requests, ['taskset/validate']);
});

test('the dashboard shows the run config as YAML', () => {
  const text = configYaml(
    { name: 'tiny', trainer: { lr: 0.001, steps: 40 }, stages: [{ name: 'sft', steps: 10 }] },
    '/w/train.rft.yaml',
  );
  assert.match(text, /^# as validated at the start of the run \(defaults filled in\)\n# from \/w\/train\.rft\.yaml\n/);
  assert.match(text, /\ntrainer:\n {2}lr: 0\.001\n {2}steps: 40\n/);
  assert.match(
    text,
    /\n# trainer: lr 1e-3, warm-up 0 step\(s\), grad clip 1 \(model trained from scratch: defaults for warm-up, grad clip\)\n/,
  );
  assert.deepEqual(YAML.parse(text), {
    name: 'tiny',
    trainer: { lr: 0.001, steps: 40 },
    stages: [{ name: 'sft', steps: 10 }],
  });
});

test('the dashboard config of a run from model.checkpoint names the real model, not the preset defaults', () => {
  const model = {
    source: 'checkpoint' as const,
    label: 'Qwen2ForCausalLM · 494M parameters · LoRA rank 8 · from Qwen/Qwen2-0.5B',
    architecture: 'Qwen2ForCausalLM',
    parameters: 494e6,
    loraRank: 8,
    from: 'Qwen/Qwen2-0.5B',
    tokenizer: "the model's own",
  };
  const cfg = {
    name: 'q',
    model: { size: 'tiny-0.4m', checkpoint: '/hf/models--Qwen--Qwen2-0.5B', lora: { rank: 8 } },
    tokenizer: { kind: 'char' },
    taskset: { path: '/w/t.jsonl' },
  };
  const text = configYaml(cfg, '/w/q.rft.yaml', model);
  assert.match(
    text,
    /^# as validated .*\n# from \/w\/q\.rft\.yaml\n# model: Qwen2ForCausalLM · 494M parameters · LoRA rank 8 · from Qwen\/Qwen2-0\.5B\n# tokenizer: the model's own\n/,
  );
  assert.doesNotMatch(text, /tiny-0\.4m|kind: char/);
  assert.deepEqual(Object.keys(YAML.parse(text)), ['name', 'model', 'taskset']);
  assert.deepEqual(YAML.parse(text).model, { checkpoint: '/hf/models--Qwen--Qwen2-0.5B', lora: { rank: 8 } });
  // The header says the lr the run takes and why (a checkpoint's default: lr auto, from LoRA's start).
  assert.match(
    configYaml(cfg, undefined, { ...model, hidden: 896 }),
    /\n# trainer: lr auto \(start 1e-5, kept where the update KL per token is near 0\.01, between 1e-7 and 5e-3\), warm-up 0 step\(s\), grad clip 1 \(pretrained checkpoint, LoRA: defaults for lr, warm-up, grad clip\)\n/,
  );
  assert.match(
    configYaml({ ...cfg, trainer: { lr: 'auto', lr_auto: { target_kl: 1e-3 } } }, undefined, model),
    /\n# trainer: lr auto \(start 1e-5, kept where the update KL per token is near 1e-3,/,
    "the config's lr_auto",
  );
  // A tokenizer file of the config's own is read beside a checkpoint: it stays.
  assert.deepEqual(
    YAML.parse(configYaml({ ...cfg, tokenizer: { kind: 'char', path: '/w/tok.json' } }, undefined, model)).tokenizer,
    { kind: 'char', path: '/w/tok.json' },
  );
});

test('package: the Workers view only for a scale-out setup; welcome texts without literal markdown', () => {
  const c = PACKAGE.contributes as unknown as {
    views: Record<string, { id: string; when?: string }[]>;
    viewsWelcome: { view: string; contents: string }[];
  };
  assert.equal(c.views.rftStudio!.find((v) => v.id === 'rftStudio.workers')!.when, 'config.rftStudio.scaleOut.buffer');
  for (const w of c.viewsWelcome)
    assert.ok(!w.contents.includes('**'), `${w.view}: no ** (view welcome text is not markdown-bold)`);
});

test('Runs view: two runs of the same name are told apart by start time and short id, status first in sight', async () => {
  const { RunsTree } = await import('../../src/views/runs-tree.js');
  const t1 = new Date(2026, 10, 29, 7, 15).getTime();
  const t2 = new Date(2026, 10, 29, 8, 2).getTime();
  const runs: RunInfo[] = [
    { id: 'run-20261129-071500-k3f9', name: 'my-run', status: 'failed', step: 37, totalSteps: 50, createdAt: t1 },
    { id: 'run-20261129-080200-a1b2', name: 'my-run', status: 'running', step: 4, totalSteps: 50, createdAt: t2 },
    { id: 'other-1', name: 'other', status: 'failed', createdAt: t2 + 1 },
    { id: 'bare', status: 'created', createdAt: 0 },
  ];
  const tree = new RunsTree({ runs, pending: new Map(), onDidChange: () => ({ dispose() {} }) } as never);
  const items = tree.getChildren().map((r) => tree.getTreeItem(r));
  // The long id no longer leads the label (it pushed the status off the edge of the view).
  assert.deepEqual(
    items.map((i) => i.label),
    ['other', 'my-run', 'my-run', 'bare'],
  );
  assert.deepEqual(
    items.map((i) => i.description),
    [
      'failed',
      'running · step 4/50 · started 29 Nov 08:02 · #a1b2',
      'failed · step 37/50 · started 29 Nov 07:15 · #k3f9',
      'created',
    ],
  );
});

// As Dawn prints them on a machine without a usable Vulkan driver (issue 40 item 2).
const DAWN_LINES = [
  'Warning: vkCreateInstance: Found no drivers!',
  'Warning: vkCreateInstance failed with VK_ERROR_INCOMPATIBLE_DRIVER',
];

test("no GPU: the status bar's tooltip gives Dawn's own reason", () => {
  const engine = {
    requested: 'webgpu',
    engine: 'webgpu' as const,
    ok: false,
    detail: 'no GPU adapter: Dawn found no GPU adapter',
  };
  const s = statusText('running', { activeRun: undefined, counts: undefined, engine, dawnSaid: DAWN_LINES });
  assert.match(s.text, /\$\(warning\) no GPU$/);
  assert.match(
    s.tooltip,
    /\nDawn: vkCreateInstance: Found no drivers!; vkCreateInstance failed with VK_ERROR_INCOMPATIBLE_DRIVER$/,
  );
  // A GPU in use: Dawn's chatter is no reason for anything.
  const ok = statusText('running', {
    activeRun: undefined,
    counts: undefined,
    engine: { ...engine, ok: true, detail: 'GPU adapter x' },
    dawnSaid: DAWN_LINES,
  });
  assert.doesNotMatch(ok.tooltip, /Dawn:/);
});
