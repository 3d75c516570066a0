// Partial rollouts (explorer.partial_rollout) in the explorer: a trajectory is cut at the per-step
// budget, stored as `partial`, continued in later steps with those steps' weights; the finished one is
// the concatenation of its stored segments, each segment's behaviour log-probs are what that
// segment's weights give on recomputation, its reward is computed once on the whole text, and a
// group reaches the experience pipeline only when all its samples are finished.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine, tf } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { tokenLogprobs } from '../../backend/model/logprobs.js';
import { LocalRolloutModel } from '../../backend/explorer/local-model.js';
import { Explorer, type ExperienceSink } from '../../backend/explorer/explorer.js';
import type { RewardFn } from '../../backend/explorer/workflow.js';
import { workflows } from '../../backend/explorer/workflows/index.js';
import { isUnfinished, partialState } from '../../backend/explorer/partial.js';
import type { Experience, Task } from '../../backend/core/types.js';
import { ByteTestTokenizer } from '../helpers/byte-tokenizer.js';

await initEngine();
const tok = new ByteTestTokenizer();

/** The buffer as a map (the stores' own behaviour is tested in test/buffer/partial-store.test.ts). */
class MapSink implements ExperienceSink {
  rows = new Map<string, Experience>();
  appended: Experience[][] = [];
  async append(exps: Experience[], opts?: { replacing?: string[] }): Promise<void> {
    for (const id of opts?.replacing ?? []) {
      assert.equal(this.rows.get(id)?.status, 'partial', `${id} replaced but not a partial row`);
      this.rows.delete(id);
    }
    for (const e of exps) {
      assert.ok(!this.rows.has(e.id), `${e.id} appended twice`);
      this.rows.set(e.id, structuredClone(e));
    }
    this.appended.push(exps.filter((e) => e.status !== 'partial'));
  }
  async pending(): Promise<Experience[]> {
    return [...this.rows.values()].filter((e) => e.status === 'partial').map((e) => structuredClone(e));
  }
}

function recompute(model: Transformer, e: Experience): number[] {
  const ids = [...e.promptTokens, ...e.responseTokens];
  const lp = tf.tidy(() => tokenLogprobs(model, tf.tensor2d(ids, [1, ids.length], 'int32')).logprobs.dataSync());
  const P = e.promptTokens.length;
  return e.responseTokens.map((_, j) => lp[P + j - 1]!);
}

test("a trajectory cut at the step budget is continued with each later step's weights; tokens, log-probs and reward add up", async () => {
  const cfg = makeConfig({
    vocabSize: tok.vocabSize,
    dModel: 16,
    nLayers: 1,
    nHeads: 2,
    nKvHeads: 1,
    dFF: 32,
    maxSeqLen: 96,
  });
  const weights = [new Transformer(cfg, 11), new Transformer(cfg, 12), new Transformer(cfg, 13)];
  const tasks: Task[] = [0, 1, 2].map((i) => ({
    id: `t${i}`,
    taskset: 'x',
    domain: 'text',
    prompt: `say something long ${i}`,
    answer: 'x',
  }));
  let next = 0;
  const rewardCalls: { task: string; text: string }[] = [];
  const reward: RewardFn = async (task, text) => {
    rewardCalls.push({ task: task.id, text });
    return { reward: text.length % 3, status: 'ok' };
  };
  const sink = new MapSink();
  const processed: Experience[][] = [];
  const budget = 5;
  const maxNew = 13;
  const explorer = new Explorer(
    workflows.get('single_turn'),
    reward,
    { next: (n) => Array.from({ length: n }, () => tasks[next++ % tasks.length]!) },
    sink,
    {
      runId: 'r',
      tasksPerStep: 1,
      repeatTimes: 3,
      sampling: { maxNewTokens: maxNew, temperature: 1, topK: 0, topP: 1 },
      seed: 5,
      partial: { maxTokensPerStep: budget },
      process: (exps) => {
        processed.push(exps);
        return exps;
      },
    },
  );
  const snapshots: Map<string, Experience>[] = [];
  try {
    for (let s = 0; s < 6; s++) {
      const v = s % weights.length;
      const m = await explorer.exploreStep(new LocalRolloutModel(weights[v]!, tok, v));
      // No trajectory got more than the budget in one step, and the step's tokens are only the new ones.
      assert.ok(m.max_trajectory_tokens! <= budget, `step ${s}: ${m.max_trajectory_tokens} tokens in one trajectory`);
      assert.ok(m.tokens <= budget * (3 + m.partial_continued!), `step ${s}: ${m.tokens} tokens`);
      snapshots.push(new Map([...sink.rows].map(([k, e]) => [k, structuredClone(e)])));
    }
    const done = [...sink.rows.values()].filter((e) => e.status !== 'partial');
    const multi = done.filter((e) => (e.segments?.length ?? 0) > 1);
    assert.ok(multi.length >= 3, `${multi.length} finished trajectories spanned more than one step`);
    assert.ok(
      multi.some((e) => e.segments!.length === 3),
      'a 13-token trajectory with budget 5 spans three steps',
    );
    for (const e of done) {
      const segs = e.segments ?? [];
      // Segments cover the response in order; each one is at most the budget.
      assert.equal(segs.at(-1)?.end ?? 0, e.responseTokens.length);
      segs.forEach((g, i) => {
        assert.equal(g.start, i === 0 ? 0 : segs[i - 1]!.end);
        assert.ok(g.end - g.start <= budget);
        assert.equal(
          g.version,
          g.step! % weights.length,
          'a segment is sampled by the weights of the step that made it',
        );
        // The stored prefix at the end of that segment's step is exactly the trajectory up to it.
        const then = snapshots[g.step!]!.get(e.id);
        if (g.end < e.responseTokens.length) {
          assert.ok(then && isUnfinished(then), `${e.id}: stored unfinished after step ${g.step}`);
          assert.deepEqual(then.responseTokens, e.responseTokens.slice(0, g.end));
          assert.deepEqual(then.logprobs, e.logprobs.slice(0, g.end));
        }
        // Behaviour log-probs of the segment = recomputation under that segment's weights.
        const re = recompute(weights[g.version]!, e);
        for (let j = g.start; j < g.end; j++)
          assert.ok(
            Math.abs(re[j]! - e.logprobs[j]!) < 2e-3,
            `${e.id} token ${j}: ${e.logprobs[j]} vs recomputed ${re[j]}`,
          );
      });
      assert.equal(e.modelVersion, segs.at(-1)?.version ?? e.modelVersion);
      assert.equal(e.responseText, tok.decode(e.responseTokens, { skipSpecial: true }));
      assert.equal(e.metadata?.partial, undefined);
      // The reward: once per trajectory, on its whole text.
      const calls = rewardCalls.filter((c) => c.task === e.taskId && c.text === e.responseText);
      assert.ok(calls.length >= 1, `${e.id}: reward computed on the full text`);
      assert.equal(e.reward, e.responseText.length % 3);
    }
    const waitingDone = [...sink.rows.values()].filter((e) => e.status === 'partial' && partialState(e)?.finished);
    for (const e of waitingDone)
      assert.equal(e.reward, e.responseText.length % 3, 'a sample waiting for its group keeps its reward');
    assert.equal(
      rewardCalls.length,
      done.length + waitingDone.length,
      'one reward call per finished trajectory, none on a prefix',
    );
    // Whole groups only: every group the pipeline saw was complete (all 3 samples) and none had a partial sample.
    for (const batch of processed) {
      const groups = new Map<string, Experience[]>();
      for (const e of batch) groups.set(e.groupId, [...(groups.get(e.groupId) ?? []), e]);
      for (const [g, members] of groups) {
        assert.equal(members.length, 3, `group ${g} released with ${members.length} samples`);
        for (const e of members) assert.notEqual(e.status, 'partial');
      }
    }
    // Still unfinished at the end: stored with their task and no reward.
    for (const e of [...sink.rows.values()].filter(isUnfinished)) {
      assert.equal(partialState(e)!.task!.id, e.taskId);
      assert.equal(e.reward, 0);
      assert.ok(e.responseTokens.length < maxNew);
    }
  } finally {
    for (const w of weights) w.dispose();
  }
});

test('without partial_rollout nothing is cut: samples run to max_new_tokens in one step', async () => {
  const cfg = makeConfig({
    vocabSize: tok.vocabSize,
    dModel: 16,
    nLayers: 1,
    nHeads: 2,
    nKvHeads: 1,
    dFF: 32,
    maxSeqLen: 96,
  });
  const model = new Transformer(cfg, 11);
  const sink = new MapSink();
  const task: Task = { id: 't', taskset: 'x', domain: 'text', prompt: 'p', answer: 'x' };
  try {
    const explorer = new Explorer(
      workflows.get('single_turn'),
      async () => ({ reward: 1, status: 'ok' }),
      { next: (n) => Array.from({ length: n }, () => task) },
      sink,
      {
        runId: 'r',
        tasksPerStep: 1,
        repeatTimes: 2,
        sampling: { maxNewTokens: 13, temperature: 1, topK: 0, topP: 1 },
        seed: 5,
      },
    );
    const m = await explorer.exploreStep(new LocalRolloutModel(model, tok, 0));
    assert.equal(m.partial_pending, undefined);
    for (const e of sink.rows.values()) {
      assert.notEqual(e.status, 'partial');
      assert.equal(e.segments, undefined);
    }
    assert.ok(Math.max(...[...sink.rows.values()].map((e) => e.responseTokens.length)) > 5);
  } finally {
    model.dispose();
  }
});
