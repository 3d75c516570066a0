// An evaluation whose reward fails on every answer has no accuracy (was: accuracy 0 reported as a
// result, exit 0, no warning): null with "no result: N infrastructure failure(s), first: FILE:LINE …"
// in the evaluation, the run's summary line, its warnings (the dashboard's), the report and the exit
// status (3). One that fails on some answers keeps the accuracy over the scored ones and counts the rest.
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Task } from '../../backend/core/types.js';
import { cliNodeArgs } from '../../backend/core/package-root.js';
import { describeAccuracy, evaluate, EXIT_NO_RESULT } from '../../backend/coordinator/evaluate.js';
import { MetricsLog } from '../../backend/coordinator/monitor.js';
import { toPoints } from '../../backend/server/run-poller.js';
import type { RewardFn, RolloutModel } from '../../backend/explorer/workflow.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { tempWorkspace, tinyConfig, writeConfig } from './tiny-config.js';

const tok = CharTokenizer.fromAlphabet('abc');
// A model that answers 'a' to everything: what is scored here is the reward's side.
const model: RolloutModel = {
  version: 0,
  tokenizer: tok,
  generate: async (prompts: number[][]) => prompts.map(() => ({ tokens: tok.encode('a'), text: 'a', logprobs: [0] })),
} as unknown as RolloutModel;
const tasks: Task[] = [0, 1, 2, 3].map((i) => ({
  id: `t${i}`,
  taskset: 't',
  domain: 'text',
  prompt: 'ab',
  answer: 'a',
}));

test('evaluate: every answer an infra failure is no result (null), naming the count and the first reason', async () => {
  const broken: RewardFn = async (t) => ({ reward: 0, status: 'infra_failure', reason: `r.mjs:3 broke on ${t.id}` });
  const r = await evaluate(model, tasks, broken, { maxNewTokens: 1 });
  assert.equal(r.accuracy, null, 'no accuracy, not 0');
  assert.equal(r.mean_reward, null);
  assert.equal(r.n, 0);
  assert.equal(r.infra_failures, 4);
  assert.equal(r.no_result, 'no result: 4 infrastructure failure(s), first: r.mjs:3 broke on t0');
  assert.equal(describeAccuracy(r), r.no_result);
});

test('evaluate: some answers failed: the accuracy over the scored ones, the failures counted', async () => {
  const half: RewardFn = async (t) =>
    Number(t.id.slice(1)) % 2 ? { reward: 0, status: 'infra_failure', reason: 'down' } : { reward: 1, status: 'ok' };
  const r = await evaluate(model, tasks, half, { maxNewTokens: 1 });
  assert.equal(r.accuracy, 1);
  assert.equal(r.n, 2);
  assert.equal(r.infra_failures, 2);
  assert.equal(r.no_result, undefined);
  assert.equal(describeAccuracy(r), 'accuracy 1.000 (2 infrastructure failure(s) left out)');
});

function runCli(ws: string, throwOn: string): { status: number | null; stdout: string; stderr: string } {
  const code = join(ws, 'r.mjs');
  // Line 3 throws on the eval tasks THROWON selects (the built-in reverse eval ids are reverse-eval-N).
  writeFileSync(
    code,
    `export default function (rft) {
  rft.register('reward', 'evalfail', (task, response) => {
    if (${throwOn}) throw new Error('scorer broken');
    return 1;
  });
}
`,
  );
  const cfg = tinyConfig({ sync_offset: 0 }, 1, {
    experts: undefined,
    stages: [{ name: 'main', algorithm: { name: 'grpo' }, steps: 1 }],
    placement: 'memory',
    workflow: { name: 'single_turn', reward: 'evalfail', file: './r.mjs' },
  });
  const file = writeConfig(ws, cfg);
  const r = spawnSync(
    process.execPath,
    [...cliNodeArgs(), 'run', file, '--workspace', ws, '--quiet', '--trust-workspace-code'],
    { encoding: 'utf8', timeout: 300_000 },
  );
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('rft run whose reward fails on every eval task: no result in the summary, warnings, report; exit 3', async () => {
  const ws = tempWorkspace();
  try {
    const r = runCli(ws, `task.id.includes('-eval-')`);
    assert.equal(r.status, EXIT_NO_RESULT, `exit status: ${r.stderr.slice(-2000)}`);
    const file = join(ws, 'r.mjs');
    assert.match(r.stderr, /rft: the run completed, but its evaluation has no result \(no result: 8 infrastructure/);
    const last = JSON.parse(r.stdout.trim().split('\n').pop()!);
    // The keys CI reads are there; the accuracies are null with their reason.
    for (const k of ['base_accuracy', 'final_accuracy', 'wall_seconds', 'report', 'run_dir', 'checkpoint'])
      assert.ok(k in last, k);
    assert.equal(last.base_accuracy, null);
    assert.equal(last.final_accuracy, null);
    const why = new RegExp(
      `^no result: 8 infrastructure failure\\(s\\), first: custom reward 'evalfail' threw at ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3: scorer broken`,
    );
    assert.match(last.final_no_result, why);
    assert.match(last.base_no_result, why);
    assert.ok(
      last.evals.every(
        (e: { accuracy: unknown; infra_failures: number }) => e.accuracy === null && e.infra_failures === 8,
      ),
    );
    const warned = last.warnings.filter((w: { code: string }) => w.code === 'eval_no_result');
    assert.equal(warned.length, 2, 'the start and the final evaluations');
    assert.match(r.stdout, /warning: eval final \(v1\): no result: 8 infrastructure failure/);
    assert.match(r.stdout, /\| final {4}\| {5}1 \| no result \|/);
    // The report says it, and never 0.000 as the accuracy.
    const html = readFileSync(last.report, 'utf8');
    assert.match(html, /no result: 8 infrastructure failure/);
    // The dashboard's points carry the warning (webview/dashboard/app.ts lists them) and no eval_accuracy.
    const points = toPoints('x', new MetricsLog(join(last.run_dir, 'metrics.jsonl')).read());
    assert.ok(points.some((p) => p.warnings?.some((w) => w.code === 'eval_no_result')));
    assert.ok(points.every((p) => p.values.eval_accuracy === undefined));
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('rft run whose reward fails on some eval tasks: an accuracy over the scored ones, failures counted; exit 0', async () => {
  const ws = tempWorkspace();
  try {
    const r = runCli(ws, `/-eval-[0-3]$/.test(task.id)`);
    assert.equal(r.status, 0, r.stderr.slice(-2000));
    const last = JSON.parse(r.stdout.trim().split('\n').pop()!);
    assert.equal(last.final_accuracy, 1, 'the reward gives 1 to every answer it scores');
    assert.equal(last.final_no_result, undefined);
    assert.ok(last.evals.every((e: { infra_failures: number }) => e.infra_failures === 4));
    assert.match(r.stdout, /4 infrastructure failure\(s\) left out/);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
