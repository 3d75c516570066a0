// Feature matrix (issue 25): the task selectors change what a run explores, as they claim, read back
// from the buffer's rollouts (each explored task leaves repeat_times rows). The selectors' weights are
// unit-tested in test/buffer/taskset-selectors.test.ts; here they are wired through a whole run:
// priority draws tasks the policy fails more often than ones it solves (a reward file decides which
// are solved), curriculum explores the easiest tasks (the taskset's `difficulty`) first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { tempWorkspace, tinyConfig } from '../coordinator/tiny-config.js';

const STEPS = 15;

/** Tasks explored in the run, one entry per explore (group of repeat_times rows). */
async function explored(runDir: string, runId: string): Promise<string[]> {
  const store = await openStore(join(runDir, 'buffer.db'));
  try {
    const rows = await store.list({ runId, source: 'usual', limit: 10_000 });
    const groups = new Map<string, string>();
    for (const e of rows) groups.set(e.groupId, e.taskId);
    return [...groups.values()];
  } finally {
    await store.close();
  }
}

/** A run of GRPO over the workspace's tasks.jsonl with the given selector (memory, lockstep). */
async function run(ws: string, runId: string, selector: string, reward: { name: string; file?: string }) {
  const cfg = tinyConfig({ sync_offset: 0 }, STEPS, {
    taskset: { path: join(ws, 'tasks.jsonl'), selector },
    experts: undefined,
    // One explore step (2 tasks x 2 samples) a trainer step.
    trainer: { batch_size: undefined },
    workflow: { name: 'single_turn', reward: reward.name, ...(reward.file ? { file: reward.file } : {}) },
    placement: 'memory',
    synchronizer: { sync_offset: 0 },
    buffer: { storage: 'sqlite', max_staleness: 0 },
    stages: [{ name: 'g', algorithm: { name: 'grpo' }, steps: STEPS }],
  });
  const s = await runJob({ config: cfg, workspace: ws, runId, trustWorkspaceCode: !!reward.file });
  assert.equal(s.trainer_steps, STEPS);
  return explored(s.run_dir, runId);
}

const share = (ids: string[], p: (id: string) => boolean) => ids.filter(p).length / ids.length;

test('priority: tasks the policy solves are drawn far less often than ones it fails; shuffle draws both alike', async () => {
  const ws = tempWorkspace();
  try {
    // 4 tasks a reward file marks solved (s*), 4 never solved (u*).
    const ids = ['s0', 's1', 's2', 's3', 'u0', 'u1', 'u2', 'u3'];
    writeFileSync(
      join(ws, 'tasks.jsonl'),
      ids
        .map((id, i) => JSON.stringify({ id, prompt: `reverse: ab${'cdefghij'[i]}`, answer: `${'cdefghij'[i]}ba` }))
        .join('\n') + '\n',
    );
    writeFileSync(
      join(ws, 'solved.mjs'),
      `export default function (rft) {
  rft.register('reward', 'solved_s', (task) => ({ reward: task.id.startsWith('s') ? 1 : 0 }));
}
`,
    );
    const unsolved = (id: string) => id.startsWith('u');
    const pri = await run(ws, 'pri', 'priority', { name: 'solved_s', file: join(ws, 'solved.mjs') });
    const shu = await run(ws, 'shu', 'shuffle', { name: 'solved_s', file: join(ws, 'solved.mjs') });
    assert.equal(pri.length, STEPS * 2);
    // Shuffle: whole permutations of the 8 tasks (3 epochs and 6 of the 4th), so half or near it.
    assert.ok(Math.abs(share(shu, unsolved) - 0.5) <= 0.1, `shuffle: unsolved share ${share(shu, unsolved)}`);
    // Priority (floor 0.1): once seen, a solved task weighs 0.1 against an unsolved one's 1.
    assert.ok(share(pri, unsolved) >= 0.7, `priority: unsolved share ${share(pri, unsolved)} of ${pri.join(',')}`);
    // The floor: solved tasks still come back (issue 25 item 6).
    assert.ok(
      pri.filter((id) => !unsolved(id)).length > 4,
      `priority: solved tasks drawn ${pri.filter((id) => !unsolved(id)).length} times`,
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('curriculum: the first steps explore the easiest tasks only (taskset difficulty)', async () => {
  const ws = tempWorkspace();
  try {
    // 20 tasks, difficulty rising with the index but listed in a scrambled order.
    const order = Array.from({ length: 20 }, (_, i) => (i * 7) % 20);
    writeFileSync(
      join(ws, 'tasks.jsonl'),
      order
        .map((i) =>
          JSON.stringify({
            id: `d${i}`,
            prompt: `reverse: x${i}`,
            answer: `${[...String(i)].reverse().join('')}x`,
            difficulty: i / 20,
          }),
        )
        .join('\n') + '\n',
    );
    const cur = await run(ws, 'cur', 'curriculum', { name: 'exact_match' });
    const rank = (id: string) => Number(id.slice(1));
    // The window starts at the easiest 20% (4 tasks) and grows over 100 steps: by step 15 it holds 7.
    assert.ok(
      cur.every((id) => rank(id) < 7),
      `curriculum explored ${cur.join(',')}`,
    );
    const shu = await run(ws, 'shu', 'shuffle', { name: 'exact_match' });
    assert.ok(shu.filter((id) => rank(id) >= 6).length >= 10, `shuffle explored ${shu.join(',')}`);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
