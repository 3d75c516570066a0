// A policy whose every group scores the same reward gives a GRPO step nothing to train on once
// reward_filter drop_zero_variance drops those groups: the explorer refilled the same step forever
// (6,280 rounds in 20 minutes in an lr sweep), and since sampling and the SQLite buffer are synchronous
// the loop never yielded, so no stop or timer landed. Now each refill round yields, and after
// FillingExplorer.maxBarrenRounds rounds in a row without a trainable row the run stops, with a
// `no_trainable_rollout` warning and that reason as its status. Here exact_match (no partial credit)
// with room for one token against answers of three letters: every sample scores 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { setLogSink } from '../../backend/core/log.js';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import { tempWorkspace, tinyConfig } from './tiny-config.js';

/** Tasks whose answers have 3 letters, scored by exact_match without partial credit. */
function flatTasks(ws: string): string {
  const f = join(ws, 'tasks.jsonl');
  const words = ['abc', 'bcd', 'cde', 'def', 'efa', 'fab', 'ace', 'bdf'];
  writeFileSync(
    f,
    words.map((w) => JSON.stringify({ prompt: `rev ${w}`, answer: [...w].reverse().join('') })).join('\n') + '\n',
  );
  return f;
}

function flatRewardConfig(ws: string, syncOffset: number, placement = 'memory'): RunConfig {
  const base = tinyConfig({ sync_offset: syncOffset }) as unknown as Record<string, unknown>;
  const { config, issues } = validateRunConfig({
    ...base,
    placement,
    taskset: { path: flatTasks(ws), format: { prompt_key: 'prompt', response_key: 'answer' } },
    // One new token against answers of 3 letters: exact_match can never pay, every group scores 0.
    explorer: { ...(base.explorer as object), sampling: { max_new_tokens: 1 } },
    eval: { builtin: 'reverse', size: 2, split: 'eval' },
    trainer: { ...(base.trainer as object), batch_size: undefined },
    experience_pipeline: [
      { name: 'validity' },
      { name: 'reward_filter', drop_zero_variance: true },
      { name: 'advantage' },
    ],
    stages: [{ name: 'g', algorithm: { name: 'grpo' }, steps: 3 }],
  });
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}

/** Log lines while `f` runs (and to stderr as usual). */
async function withLog<T>(onLine: (msg: string) => void, f: () => Promise<T>): Promise<T> {
  setLogSink((level, scope, msg) => {
    process.stderr.write(`${level} ${scope}: ${msg}\n`);
    onLine(msg);
  });
  try {
    return await f();
  } finally {
    setLogSink((level, scope, msg) => process.stderr.write(`${level} ${scope}: ${msg}\n`));
  }
}

for (const syncOffset of [0, 1]) {
  const placement = syncOffset ? 'overlapped' : 'lockstep';
  test(
    `memory ${placement}: a reward with no spread stops the run with a no_trainable_rollout warning instead of refilling forever`,
    {
      timeout: 120_000,
    },
    async () => {
      const ws = tempWorkspace();
      try {
        const summary = await runJob({ config: flatRewardConfig(ws, syncOffset), workspace: ws, runId: 'flat' });
        assert.equal(summary.trainer_steps, 0, 'no step had a trainable row');
        const w = summary.warnings.find((x) => x.code === 'no_trainable_rollout');
        assert.ok(w, `a no_trainable_rollout warning: ${JSON.stringify(summary.warnings)}`);
        assert.match(w.message, /explore step 0: 20 refill rounds in a row made no trainable rollout/);
        assert.match(w.message, /dropped by the experience pipeline/);
        assert.equal(w.values.rounds, 20);
        assert.equal(w.values.reward_mean, 0, 'every sample scored 0');
        assert.equal(summary.stop_reason, w.message);
        const rec = (await (await RunRegistry.open(ws)).get('flat'))!;
        assert.equal(rec.status, 'stopped', 'stopped, never completed');
        assert.equal(rec.statusReason, w.message);
      } finally {
        rmSync(ws, { recursive: true, force: true });
      }
    },
  );
}

test(
  'a stop lands during the refill rounds: the run ends stopped before the no-trainable bound',
  { timeout: 120_000 },
  async () => {
    const ws = tempWorkspace();
    const ac = new AbortController();
    let round = 0;
    try {
      const summary = await withLog(
        (msg) => {
          // FillingExplorer says "after 8 rounds" at its 8th refill round: the stop comes from a timer,
          // which fires only if the refill loop gives the event loop a turn.
          if (/step 0: 0 of \d+ trainable experience\(s\) after 8 rounds/.test(msg) && !round++)
            setTimeout(() => ac.abort('stop'), 0);
        },
        () => runJob({ config: flatRewardConfig(ws, 0), workspace: ws, runId: 'stopme', signal: ac.signal }),
      );
      assert.equal(round, 1, 'the refill reached its 8th round');
      assert.ok(ac.signal.aborted);
      assert.equal(summary.stop_reason, undefined, 'stopped by the signal, not by the bound');
      assert.deepEqual(
        summary.warnings.filter((x) => x.code === 'no_trainable_rollout'),
        [],
        'the stop landed before 20 rounds',
      );
      const rec = (await (await RunRegistry.open(ws)).get('stopme'))!;
      assert.equal(rec.status, 'stopped');
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  },
);

test(
  'placement checkpoint: the explorer process fails the step with the same message instead of refilling forever',
  { timeout: 120_000 },
  async () => {
    const ws = tempWorkspace();
    try {
      await assert.rejects(
        runJob({ config: flatRewardConfig(ws, 0, 'checkpoint'), workspace: ws, runId: 'flatproc' }),
        /explore step 0: 20 refill rounds in a row made no trainable rollout/,
      );
      const rec = (await (await RunRegistry.open(ws)).get('flatproc'))!;
      assert.equal(rec.status, 'failed');
      assert.match(rec.statusReason ?? '', /made no trainable rollout/);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  },
);
