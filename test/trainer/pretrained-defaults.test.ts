// Issue 23 item 6: a model pretrained elsewhere, then GRPO with the defaults a run from
// `model.checkpoint` takes. The model is made here (tools/pretrained-model.ts): SFT on
// "last letter of a word" with demonstrations biased to the first letter, until it is partly right,
// then written as a Hugging Face folder (config.json, model.safetensors, tokenizer.json). A run's
// config sets no lr: full fine-tuning and LoRA each take `lr: auto` (issue 41: logged with why, the lr
// moved each step by the update KL, both in metrics.jsonl), and held-out accuracy rises without a
// collapse warning; a clearly too-high FIXED lr collapses the policy and the guard says so (log,
// metrics record, summary) naming the learning rate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { setLogSink } from '../../backend/core/log.js';
import { makePretrainedModel, writeLastLetterTasks } from '../../tools/pretrained-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-pretrained-defaults-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
// The chosen lr is an info line: let info through to a sink that keeps the lines (warnings still reach stderr).
const lines: string[] = [];
process.env.RFT_LOG_LEVEL = 'info';
setLogSink((level, scope, msg) => {
  lines.push(`${level} ${scope}: ${msg}`);
  if (level === 'warn' || level === 'error') process.stderr.write(`${level} ${scope}: ${msg}\n`);
});

const pretrained = await makePretrainedModel(join(root, 'model'));
const files = writeLastLetterTasks(join(root, 'data'));

async function grpo(name: string, opts: { lora?: boolean; lr?: number; steps: number; report?: boolean }) {
  const dir = join(root, name);
  const lora = opts.lora ? '  lora: { rank: 8, alpha: 16 }\n' : '';
  const lr = opts.lr !== undefined ? `  lr: ${opts.lr}\n` : '';
  const config = join(root, `${name}.rft.yaml`);
  writeFileSync(
    config,
    `name: ${name}\nseed: 1\nmodel:\n  checkpoint: ${JSON.stringify(pretrained.dir)}\n${lora}taskset:\n  path: ${JSON.stringify(files.train)}\neval:\n  path: ${JSON.stringify(files.eval)}\n` +
      `workflow: { name: single_turn, reward: exact_match }\nalgorithm: { name: grpo }\n` +
      `explorer:\n  tasks_per_step: 8\n  repeat_times: 8\n  sampling: { max_new_tokens: 3, temperature: 1 }\n  eval_sampling: { max_new_tokens: 3 }\n` +
      `trainer:\n  batch_size: 64\n  steps: ${opts.steps}\n${lr}placement: memory\nmonitor: { report: ${opts.report ?? false} }\n`,
  );
  const from = lines.length;
  const s = await runJob({ config: loadRunConfig(config), configPath: config, workspace: dir, runId: name });
  const recs = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { s, recs, log: lines.slice(from) };
}

test('the pretrained model is partly right before RL (SFT with a bias)', () => {
  assert.ok(pretrained.accuracy > 0.2 && pretrained.accuracy < 0.6, `greedy held-out accuracy ${pretrained.accuracy}`);
});

test('full fine-tuning with the defaults (no trainer.lr): lr auto, logged with why, the lr and update KL in every train record; held-out accuracy rises, no warning', async (t) => {
  const { s, recs, log } = await grpo('full', { steps: 40 });
  t.diagnostic(`full: held-out accuracy ${s.base_accuracy} -> ${s.final_accuracy}`);
  assert.ok(
    log.some((l) =>
      l.includes(
        'lr auto (start 1e-6, kept where the update KL per token is near 0.01, between 1e-8 and 0.01), warm-up 0 step(s), grad clip 1 (pretrained checkpoint, full fine-tuning: defaults for lr, warm-up, grad clip)',
      ),
    ),
    log.filter((l) => l.includes('lr ')).join('\n'),
  );
  const train = recs.filter((r) => r.kind === 'train');
  assert.equal(train[0]!.lr, 1e-6, 'auto starts small');
  assert.ok(
    train.every((r) => typeof r.update_kl === 'number' && r.update_kl_target === 1e-2 && typeof r.lr === 'number'),
    'lr, update KL and its target on every step',
  );
  const lrs = train.map((r) => Number(r.lr));
  t.diagnostic(
    `lr path: ${lrs
      .filter((_, i) => i % 5 === 0)
      .map((x) => x.toExponential(1))
      .join(' ')}`,
  );
  assert.ok(Math.max(...lrs) > 10 * lrs[0]!, 'the lr rose from its start while the update KL was below the band');
  assert.ok(
    train.every(
      (r) =>
        typeof r.ref_kl === 'number' && typeof r.batch_reward === 'number' && typeof r.sampled_entropy === 'number',
    ),
    'the guard signals on every step',
  );
  assert.ok(s.final_accuracy! >= s.base_accuracy! + 0.1, `${s.base_accuracy} -> ${s.final_accuracy}`);
  assert.deepEqual(s.warnings, []);
});

test('LoRA with the defaults: lr auto from a LoRA start; held-out accuracy rises, no warning', async (t) => {
  const { s, recs, log } = await grpo('lora', { lora: true, steps: 30 });
  t.diagnostic(`LoRA: held-out accuracy ${s.base_accuracy} -> ${s.final_accuracy}`);
  assert.ok(
    log.some((l) => l.includes('lr auto (start 1e-5, kept where the update KL per token is near 0.01')),
    log.filter((l) => l.includes('lr ')).join('\n'),
  );
  assert.ok(recs.filter((r) => r.kind === 'train').every((r) => typeof r.update_kl === 'number'));
  assert.ok(s.final_accuracy! >= s.base_accuracy! + 0.2, `${s.base_accuracy} -> ${s.final_accuracy}`);
  assert.deepEqual(s.warnings, []);
});

test('a clearly too-high lr collapses the policy: the guard warns once, names the lr, and the summary and metrics carry it', async (t) => {
  const { s, recs, log } = await grpo('too-high', { lr: 0.03, steps: 14, report: true });
  t.diagnostic(`lr 0.03: held-out accuracy ${s.base_accuracy} -> ${s.final_accuracy}; ${s.warnings[0]?.message}`);
  assert.ok(s.final_accuracy! < s.base_accuracy!, 'the policy got worse');
  assert.equal(s.warnings.length, 1);
  const w = s.warnings[0]!;
  assert.equal(w.code, 'policy_collapse');
  assert.match(w.message, /Likely cause: the learning rate 0\.03 \(trainer\.lr\) is too high/);
  // The property, not one path to it (issue 40 item 0): the policy moved far from its reference and
  // got worse by the guard's own figures. Whether the entropy falls, rises or stays is decided by float
  // summation order (OpenBLAS kernel family, RFT_NATIVE_BLAS=0), so it is not asserted.
  const v = w.values;
  assert.ok(v.ref_kl! > 1, `far from the reference: ${JSON.stringify(v)}`);
  const rewardFell = v.batch_reward !== undefined && v.batch_reward < v.start_batch_reward!;
  const entropyMoved =
    v.sampled_entropy !== undefined &&
    (v.sampled_entropy < v.start_sampled_entropy! / 3 || v.sampled_entropy > 3 * v.start_sampled_entropy!);
  assert.ok(rewardFell || entropyMoved, `worse by the guard's figures: ${JSON.stringify(v)}`);
  assert.equal(w.values.lr, 0.03);
  assert.equal(recs.filter((r) => r.kind === 'warning').length, 1, 'said once');
  assert.ok(
    log.some((l) => l.startsWith('warn coordinator: policy collapse')),
    'in the log',
  );
  assert.match(
    readFileSync(s.report, 'utf8'),
    /<th>warnings<\/th><td>policy collapse in stage main at step \d+/,
    'in the report',
  );
  // The step size (lr, update KL) is charted in the report for a fixed lr too.
  assert.match(readFileSync(s.report, 'utf8'), /<figcaption>step size \(log10\)<\/figcaption>/);
});
