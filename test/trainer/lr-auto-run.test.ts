// Issue 41, real runs from a test-made pretrained model (tools/pretrained-model.ts, an imported
// HF folder) with no lr set (lr auto): a run stopped in the middle resumes `lr: auto` at the lr it had
// reached (rft.json lr_auto), not from its start; and a run that cannot learn (each training word's
// answer a random letter: the reward stays at chance while the updates keep moving the policy) gets
// the stall warning once, with the share of zero-variance groups, in the summary and the log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { readCheckpointMeta } from '../../backend/model/checkpoint-meta.js';
import { Rng } from '../../backend/core/rng.js';
import { lastLetterTasks, makePretrainedModel, writeLastLetterTasks } from '../../tools/pretrained-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-lr-auto-run-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const pretrained = await makePretrainedModel(join(root, 'model'));
const files = writeLastLetterTasks(join(root, 'data'));

function config(name: string, steps: number, train = files.train): string {
  const file = join(root, `${name}.rft.yaml`);
  writeFileSync(
    file,
    `name: ${name}\nseed: 1\nmodel:\n  checkpoint: ${JSON.stringify(pretrained.dir)}\ntaskset:\n  path: ${JSON.stringify(train)}\neval:\n  path: ${JSON.stringify(files.eval)}\n` +
      `workflow: { name: single_turn, reward: exact_match }\nalgorithm: { name: grpo }\n` +
      `explorer:\n  tasks_per_step: 8\n  repeat_times: 8\n  sampling: { max_new_tokens: 3, temperature: 1 }\n  eval_sampling: { max_new_tokens: 3 }\n` +
      `trainer:\n  batch_size: 64\n  steps: ${steps}\nplacement: memory\nmonitor: { report: false }\n`,
  );
  return file;
}

const trainRecs = (runDir: string) =>
  readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((r) => r.kind === 'train');

test('a stopped run resumes lr auto at the lr it had reached (saved with the checkpoint), not at its start', async () => {
  const ws = join(root, 'resume');
  const file = config('resume', 16);
  const runDir = join(ws, '.rft', 'runs', 'r1');
  const ac = new AbortController();
  const watcher = setInterval(() => {
    const f = join(runDir, 'metrics.jsonl');
    if (existsSync(f) && readFileSync(f, 'utf8').split('"kind":"train"').length - 1 >= 9) ac.abort();
  }, 20);
  const first = await runJob({
    config: loadRunConfig(file),
    configPath: file,
    workspace: ws,
    runId: 'r1',
    signal: ac.signal,
    checkpointEvery: 4,
  }).finally(() => clearInterval(watcher));
  assert.ok(first.trainer_steps < 16, `stopped early (${first.trainer_steps} steps)`);
  const before = trainRecs(runDir);
  const v = first.trainer_steps;
  const saved = readCheckpointMeta(join(runDir, 'checkpoints', `v${v}`)).lr_auto as { lr: number };
  // The checkpoint keeps the lr the controller set after its last step.
  assert.equal(saved.lr, before.find((r) => r.step === v - 1)!.lr_next);
  assert.ok(saved.lr > 1e-5, `the lr rose from its start of 1e-6 before the stop (${saved.lr})`);
  const done = await runJob({ resume: 'r1', workspace: ws, checkpointEvery: 4 });
  assert.equal(done.trainer_steps, 16);
  const resumed = trainRecs(runDir).filter((r) => Number(r.step) >= v);
  assert.equal(resumed[0]!.step, v);
  assert.equal(resumed[0]!.lr, saved.lr, 'the first resumed step trains at the saved lr');
});

test('a run that cannot learn: the stall guard warns once (reward flat, update KL moving) with the zero-variance share; the summary carries it', async () => {
  // Each training word's answer is a random letter: nothing to generalise, the reward stays at chance.
  const rng = new Rng(7);
  const noise = join(root, 'data', 'noise.jsonl');
  writeFileSync(
    noise,
    lastLetterTasks()
      .train.map((t) => JSON.stringify({ id: t.id, prompt: t.prompt, answer: 'abcdef'[rng.int(0, 6)], domain: 'text' }))
      .join('\n') + '\n',
  );
  const file = config('flat', 45, noise);
  const s = await runJob({ config: loadRunConfig(file), configPath: file, workspace: join(root, 'flat'), runId: 'f1' });
  const train = trainRecs(s.run_dir);
  assert.ok(
    train.every((r) => typeof r.zero_variance_share === 'number' && typeof r.zero_variance_groups === 'number'),
  );
  const stalls = s.warnings.filter((w) => w.code === 'run_stalled');
  assert.equal(stalls.length, 1, JSON.stringify(s.warnings));
  const w = stalls[0]!;
  assert.match(w.message, /run not learning in stage main at step \d+: the reward of the trained rollouts/);
  assert.match(w.message, /\d+% of the rollout groups had rewards all equal/);
  assert.match(w.message, /Try: a smaller trainer\.lr_auto\.target_kl/);
  assert.ok(w.values.update_kl! > 1e-5 && w.values.zero_variance_share! > 0, JSON.stringify(w.values));
});
