// RFT Studio: Train Reward Model… through the real extension (fake vscode) and a real `rft serve`:
// a run of the registry whose buffer holds curated responses (promoted / rejected, rated); the
// command picks the run, runs `rft reward-model train` in the backend, shows its progress and the
// held-out pairwise accuracy, and on "Use in a Config…" sets workflow.reward to the model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import {
  activateWith,
  deactivateFrom,
  type fakeContext,
  vscode,
  workspaceDir,
} from '../../tools/fake-vscode/harness.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import { FeedbackService } from '../../backend/buffer/feedback.js';
import { CharTokenizer, saveTokenizer } from '../../backend/model/tokenizer/index.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../backend/model/chat.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { loadRewardModel } from '../../backend/explorer/reward-model/reward.js';
import type { Experience } from '../../backend/core/types.js';
import type { RewardModelReport } from '../../backend/core/protocol.js';

const tok = CharTokenizer.train(['question good bad fine 0123456789']);
let n = 0;
function exp(runId: string, task: number, answer: string): Experience {
  const p = encodePrompt(tok, taskMessages(`question ${task}`));
  const r = encodeResponse(tok, answer);
  return {
    id: `x${n++}`,
    taskId: `t${task}`,
    groupId: `g${task}`,
    runId,
    source: 'usual',
    promptTokens: p,
    promptText: `question ${task}`,
    responseTokens: r,
    responseText: answer,
    actionMask: r.map(() => 1),
    logprobs: r.map(() => -1),
    modelVersion: 0,
    reward: 0,
    status: 'ok',
    useCount: 0,
    createdAt: n,
  };
}

let ws: string;
let ctx: ReturnType<typeof fakeContext>;

before(async () => {
  vscode.resetFake();
  ws = workspaceDir({
    'train.rft.yaml':
      '# my run\ntaskset:\n  builtin: reverse\nworkflow:\n  name: single_turn\n  reward: exact_match # changed by the command\n',
  });
  const reg = await RunRegistry.open(ws);
  await reg.create({ name: 'older', config: {}, id: 'older' });
  const run = await reg.create({ name: 'curated', config: {}, id: 'curated' });
  saveTokenizer(tok, run.dir);
  const store = new SqliteStore(run.dbPath);
  const fb = new FeedbackService(store);
  for (let t = 0; t < 32; t++) {
    const [good, bad, fine] = [
      exp('curated', t, `good ${t}`),
      exp('curated', t, `bad ${t}`),
      exp('curated', t, `fine ${t}`),
    ];
    await store.appendExperiences([good, bad, fine]);
    await fb.promote(good.id, 'ann');
    await fb.reject(bad.id, 'ann');
    await fb.rate(good.id, 5, 'bob');
    await fb.rate(fine.id, 3, 'bob');
  }
  await store.close();
  ({ ctx } = await activateWith(ws));
});

after(async () => {
  await deactivateFrom(ctx);
  rmSync(ws, { recursive: true, force: true });
});

test('Train Reward Model…: pick the run, train in the backend with progress, held-out accuracy shown, used in a config', async () => {
  let offered: string[] = [];
  vscode.answers.quickPick.push(
    (items) => (
      (offered = (items as { label: string }[]).map((i) => i.label)),
      (items as { label: string }[]).find((i) => i.label === 'curated')
    ),
  );
  vscode.answers.inputBox.push(join('.rft', 'reward-models', 'rm1'));
  vscode.answers.message.push('Use in a Config…');
  vscode.answers.quickPick.push((items) => (items as { label: string }[]).find((i) => i.label === 'train.rft.yaml'));
  const r = (await vscode.commands.executeCommand('rftStudio.trainRewardModel')) as RewardModelReport;
  assert.deepEqual(offered.sort(), ['curated', 'older']);
  const out = join(ws, '.rft', 'reward-models', 'rm1');
  assert.equal(r.out, out);
  assert.ok(existsSync(join(out, 'model.safetensors')) && existsSync(join(out, 'tokenizer.json')));
  // 32 tasks, 6 held out by default (0.2), 5 for validation (0.15); two pairs a task (curation, rating).
  assert.deepEqual([r.tasks, r.heldout_tasks, r.validation_tasks, r.heldout_pairs, r.train_pairs], [32, 6, 5, 12, 42]);
  assert.equal(typeof r.heldout_accuracy, 'number');
  // Progress: the phase line and training steps up to the last, as the notification's messages and in the log.
  const msgs = vscode.recorded.progress.map((p) => p.message ?? '');
  assert.ok(
    msgs.some((m) =>
      /^42 training pair\(s\) of 21 task\(s\), 10 validation pair\(s\) of 5, 12 held-out pair\(s\) of 6; \d+ rating\(s\) to train on$/.test(
        m,
      ),
    ),
    msgs.join(' | '),
  );
  assert.ok(
    msgs.includes(msgs.find((m) => /^step 200\/200 loss [\d.]+$/.test(m)) ?? '(no last step)'),
    msgs.join(' | '),
  );
  const increments = vscode.recorded.progress.reduce((a, p) => a + (p.increment ?? 0), 0);
  assert.ok(Math.abs(increments - 100) < 1e-9, `progress adds up to 100% (${increments})`);
  assert.ok(vscode.recorded.log.some((l) => l.line.startsWith('reward model (curated): step 10/200 loss ')));
  // The result names the held-out accuracy.
  const shown = vscode.recorded.messages.find((m) => m.message.startsWith('Reward model of curated'))!;
  const pct = (x: number) => (x * 100).toFixed(1);
  assert.equal(
    shown.message,
    `Reward model of curated: held-out pairwise accuracy ${pct(r.heldout_accuracy!)}% ± ${pct(r.heldout_stderr!)} on 12 pairs of 6 unseen tasks (baseline: length (${r.baselines[0]!.name.includes('longer') ? 'longer' : 'shorter'} preferred) ${pct(r.baselines[0]!.heldout_accuracy)}%) (trained on 42 pairs and ${r.train_ratings} ratings); saved in .rft/reward-models/rm1.`,
  );
  // Used: the config's reward is the model (comments kept), and the config is valid.
  const text = readFileSync(join(ws, 'train.rft.yaml'), 'utf8');
  assert.match(text, /^# my run/);
  const cfg = parse(text) as { workflow: { reward: string } };
  assert.equal(cfg.workflow.reward, `reward_model:${out}`);
  assert.ok(validateRunConfig(cfg).config);
  // The checkpoint is a reward the run can load.
  const reward = loadRewardModel(out);
  const g = await reward({ id: 'q', taskset: 'x', domain: 'text', prompt: 'question 3' }, 'good 3');
  assert.equal(g.status, 'ok');
});

test('Train Reward Model… on a run with nothing to train from: the backend says why, nothing written', async () => {
  vscode.recorded.messages.length = 0;
  vscode.answers.quickPick.push((items) => (items as { label: string }[]).find((i) => i.label === 'older'));
  vscode.answers.inputBox.push(join('.rft', 'reward-models', 'rm2'));
  const r = await vscode.commands.executeCommand('rftStudio.trainRewardModel');
  assert.equal(r, undefined);
  const err = vscode.recorded.messages.find((m) => m.kind === 'error')!;
  assert.equal(
    err.message,
    "Train reward model: --tokenizer: no tokenizer.json beside the buffer and no checkpoint of run 'older'",
  );
  assert.ok(!existsSync(join(ws, '.rft', 'reward-models', 'rm2', 'model.safetensors')));
});
