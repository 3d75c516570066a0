// `rft reward-model train`: curation (promote / reject / rate) -> stored pairs -> the reward model,
// whole tasks held out; held-out pairwise accuracy reported and usable as reward_model:<dir>.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import { FeedbackService } from '../../backend/buffer/feedback.js';
import { CharTokenizer, saveTokenizer } from '../../backend/model/tokenizer/index.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../backend/model/chat.js';
import { commands, parseFor } from '../../backend/cli/command.js';
import '../../backend/cli/commands/index.js';
import { loadRewardModel } from '../../backend/explorer/reward-model/reward.js';
import type { Experience, Task } from '../../backend/core/types.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-rm-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const tok = CharTokenizer.train(['question good bad fine 0123456789']);

let n = 0;
function exp(task: number, answer: string): Experience {
  const p = encodePrompt(tok, taskMessages(`question ${task}`));
  const r = encodeResponse(tok, answer);
  return {
    id: `x${n++}`, taskId: `t${task}`, groupId: `g${task}`, runId: 'rm-run', source: 'usual', promptTokens: p, promptText: `question ${task}`,
    responseTokens: r, responseText: answer, actionMask: r.map(() => 1), logprobs: r.map(() => -1), modelVersion: 0, reward: 0, status: 'ok', useCount: 0, createdAt: n,
  };
}

test('rft reward-model train: held-out tasks, pairwise accuracy, a checkpoint the reward reads', async () => {
  const bufferPath = join(dir, 'buffer.db');
  saveTokenizer(tok, dir);
  const store = new SqliteStore(bufferPath);
  const fb = new FeedbackService(store);
  for (let t = 0; t < 10; t++) {
    const [good, bad, fine] = [exp(t, `good ${t}`), exp(t, `bad ${t}`), exp(t, `fine ${t}`)];
    await store.appendExperiences([good, bad, fine]);
    await fb.promote(good.id, 'ann');
    await fb.reject(bad.id, 'ann');
    await fb.rate(good.id, 5, 'bob');
    await fb.rate(fine.id, 3, 'bob');
  }
  await store.close();
  const cmd = commands.get('reward-model train');
  const out = join(dir, 'rm');
  const logs: string[] = [];
  const orig = console.log;
  console.log = (s: string) => void logs.push(s);
  try {
    assert.equal(await cmd.run(parseFor(cmd, ['--run', dir, '--out', out, '--steps', '120', '--holdout', '0.3', '--lr', '3e-3'])), 0);
  } finally {
    console.log = orig;
  }
  const report = JSON.parse(logs.at(-1)!) as Record<string, number>;
  console.log(JSON.stringify(report));
  // 10 tasks, 3 held out; 2 pairs a task (curation: good copy > bad; rating: good > fine)
  assert.deepEqual([report.tasks, report.heldout_tasks, report.heldout_pairs, report.train_pairs, report.train_ratings], [10, 3, 6, 14, 14]);
  assert.ok(report.heldout_accuracy! >= 5 / 6, `held-out accuracy ${report.heldout_accuracy}`);
  const reward = loadRewardModel(out);
  const task: Task = { id: 'new', taskset: 'x', domain: 'text', prompt: 'question 42' };
  const [g, b] = [await reward(task, 'good 42'), await reward(task, 'bad 42')];
  assert.ok(g.reward > b.reward, `an unseen task: good ${g.reward} > bad ${b.reward}`);
  await assert.rejects(async () => cmd.run(parseFor(cmd, ['--run', dir])), /--run and --out are required/);
});
