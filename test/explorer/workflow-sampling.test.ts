// ctx.sampling of a workflow carries the run's stop tokens (issue 25): a custom workflow written like
// the one in workspace-code.test.ts — `ctx.model.generate(prompts, { ...ctx.sampling, seed })` —
// stops where the built-in workflows stop, in exploration and in evaluation. The rollout model here
// stops only on the tokens it is given (as an engine without a default stop set does), so a context
// without them runs every sample to max_new_tokens and the eval scores 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Explorer } from '../../backend/explorer/explorer.js';
import type { RolloutGeneration, RolloutModel, Workflow, WorkflowContext } from '../../backend/explorer/workflow.js';
import { workflows } from '../../backend/explorer/workflows/index.js';
import { evaluate } from '../../backend/coordinator/evaluate.js';
import { stopTokens } from '../../backend/model/chat.js';
import type { GenerateOptions } from '../../backend/model/generate.js';
import type { Experience, Task } from '../../backend/core/types.js';
import { ByteTestTokenizer } from '../helpers/byte-tokenizer.js';

const tok = new ByteTestTokenizer();

/** Answers "A", then the end-of-turn token, then babble up to max_new_tokens: stops only on opts.stopTokens. */
class ScriptedModel implements RolloutModel {
  readonly version = 3;
  readonly tokenizer = tok;
  readonly seen: GenerateOptions[] = [];
  async generate(prompts: number[][], opts: GenerateOptions): Promise<RolloutGeneration[]> {
    this.seen.push(opts);
    const stops = new Set(opts.stopTokens ?? []);
    const script = [...tok.encode('A'), tok.specialId('end'), ...tok.encode('B'.repeat(64))];
    return prompts.map(() => {
      const tokens: number[] = [];
      let finishReason: RolloutGeneration['finishReason'] = 'length';
      for (const t of script.slice(0, opts.maxNewTokens)) {
        tokens.push(t);
        if (stops.has(t)) {
          finishReason = 'stop';
          break;
        }
      }
      return {
        tokens,
        text: tok.decode(tokens, { skipSpecial: true }),
        logprobs: tokens.map(() => -0.1),
        finishReason,
      };
    });
  }
}

// The custom workflow of workspace-code.test.ts, as a user writes it in workflow.file.
const custom: Workflow = {
  name: 'custom_like_tests',
  async run(tasks: Task[], ctx: WorkflowContext): Promise<Experience[]> {
    const prompts: number[][] = [];
    const owners: Task[] = [];
    for (const t of tasks)
      for (let r = 0; r < ctx.repeatTimes; r++) prompts.push(ctx.model.tokenizer.encode(t.prompt!)), owners.push(t);
    const gens = await ctx.model.generate(prompts, { ...ctx.sampling, seed: ctx.seed });
    return Promise.all(
      gens.map(async (g, i) => {
        const t = owners[i]!;
        const r = await ctx.reward(t, g.text);
        return {
          id: `${ctx.step}-${i}`,
          taskId: t.id,
          groupId: `${ctx.runId}:${ctx.split}:${ctx.step}:${t.id}`,
          runId: ctx.runId,
          source: 'usual' as const,
          promptTokens: prompts[i]!,
          promptText: t.prompt!,
          responseTokens: g.tokens,
          responseText: g.text,
          actionMask: g.tokens.map(() => 1),
          logprobs: g.logprobs,
          modelVersion: ctx.model.version,
          reward: r.reward,
          status: r.status === 'ok' ? ('ok' as const) : ('infra_failure' as const),
          useCount: 0,
          createdAt: 0,
        };
      }),
    );
  },
};
workflows.register(custom.name, custom);

const tasks: Task[] = [
  { id: 't1', taskset: 'x', domain: 'text', prompt: 'say A', answer: 'A' },
  { id: 't2', taskset: 'x', domain: 'text', prompt: 'say A again', answer: 'A' },
];
const reward = async (t: Task, response: string) => ({
  reward: response.trim() === t.answer ? 1 : 0,
  status: 'ok' as const,
});
const sampling = { maxNewTokens: 12, temperature: 1, topK: 0, topP: 1 };

function explorer(wf: Workflow, out: Experience[]): Explorer {
  return new Explorer(
    wf,
    reward,
    { next: (n) => tasks.slice(0, n) },
    { append: async (e) => void out.push(...e) },
    { runId: 'r', tasksPerStep: 2, repeatTimes: 2, sampling, seed: 1 },
  );
}

test('a custom workflow spreading ctx.sampling stops at the end-of-turn token, as single_turn does', async () => {
  const model = new ScriptedModel();
  const stored: Experience[] = [];
  await explorer(custom, stored).exploreStep(model);
  assert.equal(stored.length, 4);
  for (const e of stored) {
    assert.deepEqual(
      e.responseTokens,
      [...tok.encode('A'), tok.specialId('end')],
      `stopped after the answer, got ${JSON.stringify(e.responseText)}`,
    );
    assert.equal(e.reward, 1);
  }
  // The stop tokens are the run's (the tokenizer's end of turn and eos), the same the built-in single_turn passes.
  assert.deepEqual(model.seen[0]!.stopTokens, stopTokens(tok));
  const builtin = new ScriptedModel();
  await explorer(workflows.get('single_turn'), []).exploreStep(builtin);
  assert.deepEqual(builtin.seen[0]!.stopTokens, model.seen[0]!.stopTokens);
});

test('evaluation through a custom workflow stops too, so a right answer scores', async () => {
  const model = new ScriptedModel();
  const r = await evaluate(model, tasks, reward, { maxNewTokens: 12, workflow: custom });
  assert.equal(r.accuracy, 1, 'each greedy answer is "A", not "A" and babble to max_new_tokens');
  assert.deepEqual(model.seen[0]!.stopTokens, stopTokens(tok));
  assert.equal(model.seen[0]!.temperature, 0);
});
