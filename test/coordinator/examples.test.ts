// Every built-in example config (configs/examples/*.yaml) is valid and runs end to end: a shrunken
// copy (1 SFT step on the expert demonstrations, 2 steps of its RL stage, a handful of tasks) goes
// through runJob in a temporary workspace, and the buffer and metrics it leaves are checked.
// The vision and multi-turn examples run with the synchronizer they ship with (the default,
// `checkpoint`: explorer and trainer processes), and vision also with `memory`; the single-turn ones
// run with `memory` to keep the file short (the process model of single-turn runs has its own tests:
// kill-resume, sync-offset).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import type { Experience, TaskImage } from '../../backend/core/types.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { runJob, type RunSummary } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { builtinTasksets } from '../../backend/explorer/tasksets/index.js';
import { tempWorkspace } from './tiny-config.js';

const DIR = fileURLToPath(new URL('../../configs/examples/', import.meta.url));
const FILES = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort();
const DOMAINS = ['arith', 'code', 'countdown', 'guess', 'k12', 'vision'];
const TASKS = 12;
const EVAL = 4;
const EXPERTS = 4;

test('configs/examples: one example per domain workflow', () => {
  assert.deepEqual(
    FILES,
    DOMAINS.map((d) => `${d}.yaml`),
  );
});

/** The same run, small: the config's model, tokenizer, workflow, reward and algorithms, a few steps. */
function shrink(cfg: RunConfig, extra: Record<string, unknown> = {}): RunConfig {
  assert.ok(cfg.stages && cfg.stages.length === 2, 'an example is an SFT warm-up then an RL stage');
  const [warmup, rl] = cfg.stages;
  const small = (n: number) => Math.min(n, 6);
  const raw = {
    ...cfg,
    taskset: { ...cfg.taskset, size: TASKS },
    eval: { ...cfg.eval!, size: EVAL },
    experts: { ...cfg.experts!, size: EXPERTS },
    explorer: {
      ...cfg.explorer,
      tasks_per_step: 2,
      repeat_times: 2,
      sampling: { ...cfg.explorer.sampling, max_new_tokens: small(cfg.explorer.sampling.max_new_tokens) },
      eval_sampling: {
        ...cfg.explorer.eval_sampling,
        max_new_tokens: small(cfg.explorer.eval_sampling.max_new_tokens),
      },
    },
    // The RL stage's batch follows the shrunken explore step (4 rollouts, plus MIX's expert share).
    trainer: { ...cfg.trainer, batch_size: undefined },
    stages: [
      { ...warmup!, steps: 1, wall_seconds: undefined, batch_size: EXPERTS },
      { ...rl!, steps: 2, wall_seconds: undefined },
    ],
    ...extra,
  };
  const { config, issues } = validateRunConfig(raw);
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}

async function checkRun(cfg: RunConfig, s: RunSummary, runId: string): Promise<void> {
  assert.equal(s.trainer_steps, 3, '1 SFT step + 2 RL steps');
  const store = await openStore(join(s.run_dir, 'buffer.db'));
  let usual: Experience[];
  let experts: Experience[];
  try {
    usual = await store.list({ runId, source: 'usual', limit: 1000 });
    experts = await store.list({ runId, source: 'expert', limit: 1000 });
  } finally {
    await store.close();
  }
  assert.equal(experts.length, EXPERTS);
  assert.ok(usual.length >= 2 * 2 * 2, `2 explore steps x 2 tasks x 2 samples at least, got ${usual.length}`);
  for (const e of usual) {
    // The RL stage starts after one SFT update (v1); in-process runs sample from v1 and v2, explorer
    // processes may run one step ahead onto the last version.
    assert.ok(
      Number.isInteger(e.modelVersion) && e.modelVersion >= 1 && e.modelVersion <= s.trainer_steps,
      `model version ${e.modelVersion}`,
    );
    assert.equal(e.logprobs.length, e.responseTokens.length, `experience ${e.id}: one log-prob per response token`);
    assert.equal(e.actionMask.length, e.responseTokens.length);
    e.logprobs.forEach((lp, j) =>
      assert.ok(
        Number.isFinite(lp) && lp <= 1e-6 && (e.actionMask[j] || lp === 0),
        `experience ${e.id} token ${j}: log-prob ${lp}`,
      ),
    );
    assert.ok(['ok', 'invalid', 'infra_failure'].includes(e.status), `status ${e.status}`);
    assert.ok(e.reward >= 0 && e.reward <= 1, `reward ${e.reward} in [0, 1]`);
    if (cfg.workflow.name === 'vision') {
      const im = e.metadata?.image as TaskImage | undefined;
      assert.equal(im?.rgb.length, 16 * 16 * 3, 'vision experiences carry their image');
    }
  }
  assert.ok(
    usual.some((e) => e.status === 'ok'),
    'some samples were scored',
  );
  if (cfg.workflow.name === 'multi_turn')
    assert.ok(
      usual.some((e) => e.actionMask.includes(0)),
      'environment turns are in the episodes, masked out',
    );
  for (const e of experts) {
    assert.equal(e.modelVersion, -1);
    if (cfg.workflow.name === 'vision') assert.ok(e.metadata?.image, 'expert demonstrations carry the image too');
  }
  if (cfg.workflow.name === 'vision') {
    // The published checkpoints keep the image input (explorer processes load them).
    const { model } = loadCheckpoint(s.checkpoint);
    const vision = model.config.vision;
    model.dispose();
    assert.deepEqual(vision, { patchSize: 4, channels: 3, maxPatches: 16 });
  }
  assert.ok(typeof s.final_accuracy === 'number' && s.final_accuracy >= 0 && s.final_accuracy <= 1);
  assert.ok(typeof s.base_accuracy === 'number');
  const evals = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((m) => m.kind === 'eval');
  assert.equal(evals.length, 3, 'before the first step, after the warm-up and at the end');
  assert.equal(evals[0].stage, 'start', 'the model the run starts from is evaluated first');
  for (const ev of evals) {
    assert.equal(typeof ev.accuracy, 'number');
    // Every eval task was answered and scored (multi-turn by its environment, vision with its image).
    assert.equal(Number(ev.n) + Number(ev.infra_failures), EVAL);
    if (cfg.workflow.reward !== 'code_tests') assert.equal(ev.n, EVAL, `eval scored every task: ${JSON.stringify(ev)}`);
  }
}

for (const file of FILES) {
  test(`example ${file}: valid, and a shrunken copy runs end to end`, async () => {
    const cfg = loadRunConfig(join(DIR, file));
    assert.equal(
      builtinTasksets.get(cfg.taskset.builtin!).reward,
      cfg.workflow.reward,
      "the config uses its taskset's reward",
    );
    const ws = tempWorkspace();
    try {
      const runId = file.replace('.yaml', '');
      const small = shrink(cfg, cfg.workflow.name === 'single_turn' ? { placement: 'memory' } : {});
      const s = await runJob({ config: small, workspace: ws, runId });
      await checkRun(small, s, runId);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
}

test('example vision.yaml with synchronizer memory: explorer and trainer in one process', async () => {
  const cfg = loadRunConfig(join(DIR, 'vision.yaml'));
  const ws = tempWorkspace();
  try {
    const small = shrink(cfg, { placement: 'memory' });
    assert.equal(small.placement, 'memory');
    const s = await runJob({ config: small, workspace: ws, runId: 'vision-memory' });
    await checkRun(small, s, 'vision-memory');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
