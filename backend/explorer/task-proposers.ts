// Proposers of new tasks for the `synthesize` task operator (buffer/pipeline/task/synthesize.ts):
// - exact domain augmenters: arithmetic (`Compute EXPR.` with new operands, the answer computed in
//   exact rational arithmetic) and countdown (new numbers, a target built from a random expression
//   over them, that expression as the solution);
// - a model (the rollout model being trained, or an OpenAI-compatible endpoint as a RolloutModel)
//   asked with a configurable prompt to write a task and its solution as JSON.
// Every proposal still goes through the reward check of the synthesizer; nothing here is trusted.
import type { Task } from '../core/types.js';
import { Rng } from '../core/rng.js';
import type { Proposer, TaskProposal } from '../buffer/pipeline/task/synthesize.js';
import { encodePrompt, stopTokens, taskMessages } from '../model/chat.js';
import { evaluateExpression } from './rewards/arith-parser.js';
import type { RolloutModel } from './workflow.js';

/** The fields a synthesized task takes from its parent: taskset, domain, its own reward. */
function inherited(
  parent: Task,
): Pick<Task, 'taskset' | 'domain' | 'difficulty'> & { metadata: Record<string, unknown> } {
  const reward = parent.metadata?.reward;
  return {
    taskset: parent.taskset,
    domain: parent.domain,
    ...(parent.difficulty !== undefined ? { difficulty: parent.difficulty } : {}),
    metadata: reward !== undefined ? { reward } : {},
  };
}

const ARITH = /Compute (.+?)\.(?=\s|$)/;

/** Arithmetic: the parent's expression with fresh operands; the answer is the exact (integer) value. */
export function augmentArith(parent: Task, rng: Rng): TaskProposal {
  const m = parent.prompt ? ARITH.exec(parent.prompt) : null;
  if (!m) return { parent, error: 'no `Compute EXPR.` in the prompt (not an arithmetic task)' };
  const expr = m[1]!;
  if (!/^[\d\s+\-*/()]+$/.test(expr)) return { parent, error: `'${expr}' is not integer arithmetic` };
  for (let tries = 0; tries < 50; tries++) {
    const fresh = expr.replace(/\d+/g, () => String(rng.int(1, 21)));
    let value;
    try {
      value = evaluateExpression(fresh).value;
    } catch {
      continue; // division by zero: draw again
    }
    const answer = value.toString();
    if (answer.includes('/') || fresh === expr) continue; // exact division only, and a new task
    const prompt = parent.prompt!.replace(m[0], `Compute ${fresh}.`);
    const base = inherited(parent);
    return { parent, task: { ...base, prompt, answer }, reference: `<answer>${answer}</answer>` };
  }
  return { parent, error: `no integer-valued operands found for '${expr}'` };
}

/** Countdown: the same count of numbers, new ones, a target reached by a random expression over them. */
export function augmentCountdown(parent: Task, rng: Rng): TaskProposal {
  const nums = parent.metadata?.numbers;
  const target = parent.metadata?.target ?? parent.answer;
  if (!Array.isArray(nums) || nums.length < 2 || !nums.every((n) => Number.isInteger(n)))
    return { parent, error: 'no metadata.numbers (not a countdown task)' };
  for (let tries = 0; tries < 50; tries++) {
    const fresh = nums.map(() => rng.int(1, 14));
    let expr = String(fresh[0]);
    let value = fresh[0]!;
    for (const n of fresh.slice(1)) {
      const ops = ['+', '*', ...(value - n >= 0 ? ['-'] : []), ...(value % n === 0 ? ['/'] : [])];
      const op = rng.pick(ops);
      expr = `(${expr} ${op} ${n})`;
      value = op === '+' ? value + n : op === '-' ? value - n : op === '*' ? value * n : value / n;
    }
    expr = expr.replace(/^\((.*)\)$/, '$1');
    const shown = rng.shuffle([...fresh]);
    const old = (nums as number[]).join(', ');
    // The parent's own wording where its numbers and, after them, its target appear in it; else the built-in wording.
    const at = (parent.prompt ?? '').indexOf(old);
    const tail = at < 0 ? '' : parent.prompt!.slice(at + old.length);
    const targetRe = new RegExp(`\\b${String(target)}\\b`);
    const prompt =
      at >= 0 && targetRe.test(tail)
        ? `${parent.prompt!.slice(0, at)}${shown.join(', ')}${tail.replace(targetRe, String(value))}`
        : `Using the numbers ${shown.join(', ')} (each at most once) and + - * / ( ), make ${value}. Write the expression in <answer></answer>.`;
    if (prompt === parent.prompt) continue;
    const base = inherited(parent);
    const useAll = parent.metadata?.useAll === true ? { useAll: true } : {};
    return {
      parent,
      task: {
        ...base,
        prompt,
        answer: String(value),
        metadata: { ...base.metadata, numbers: shown, target: value, solution: expr, ...useAll },
      },
      reference: `<answer>${expr}</answer>`,
    };
  }
  return { parent, error: 'no new countdown numbers found' };
}

/** Built-in tasksets an exact augmenter takes (config-check refuses proposer augment on the others). */
export const AUGMENTABLE_BUILTINS = ['arith', 'countdown'];

/** Augmenters by how they recognise a task: countdown (metadata.numbers) first, then arithmetic prompts. */
export function augmentTask(parent: Task, rng: Rng): TaskProposal {
  if (Array.isArray(parent.metadata?.numbers)) return augmentCountdown(parent, rng);
  if (parent.prompt && ARITH.test(parent.prompt)) return augmentArith(parent, rng);
  return {
    parent,
    error: 'no exact augmenter for this task (arithmetic `Compute EXPR.` or countdown metadata.numbers)',
  };
}

export const augmentProposer: Proposer = async (parents, n, ctx) => {
  const rng = new Rng(ctx.seed);
  return Array.from({ length: n }, (_, i) => augmentTask(parents[i % parents.length]!, rng));
};

export const DEFAULT_SYNTH_PROMPT = [
  'Write one new task of the same kind as this one, with different numbers or details, and solve it.',
  'Task: {prompt}',
  'Answer: {answer}',
  'Reply with JSON only: {"prompt": "the new task", "answer": "its short answer", "solution": "the full response that solves it, in the format the task asks for"}',
].join('\n');

const fill = (template: string, t: Task): string =>
  template
    .replace(/\{prompt\}/g, t.prompt ?? (t.messages ?? []).map((m) => m.content).join('\n'))
    .replace(/\{answer\}/g, t.answer ?? '');

/** A model's reply as a proposal: the JSON object in it with `prompt`, `solution` and optionally `answer` / `metadata`. */
export function parseProposal(parent: Task, reply: string): TaskProposal {
  const a = reply.indexOf('{');
  const b = reply.lastIndexOf('}');
  if (a < 0 || b <= a) return { parent, error: 'the reply holds no JSON object' };
  let o: unknown;
  try {
    o = JSON.parse(reply.slice(a, b + 1));
  } catch (e) {
    return { parent, error: `the reply's JSON does not parse: ${(e as Error).message.slice(0, 80)}` };
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o))
    return { parent, error: 'the reply is not a JSON object' };
  const r = o as Record<string, unknown>;
  if (typeof r.prompt !== 'string' || r.prompt.trim() === '') return { parent, error: 'the reply has no "prompt"' };
  if (r.metadata !== undefined && (typeof r.metadata !== 'object' || r.metadata === null || Array.isArray(r.metadata)))
    return { parent, error: '"metadata" is not an object' };
  const answer = typeof r.answer === 'string' || typeof r.answer === 'number' ? String(r.answer) : undefined;
  const base = inherited(parent);
  const meta = { ...(r.metadata as Record<string, unknown> | undefined), ...base.metadata };
  return {
    parent,
    task: { ...base, prompt: r.prompt, ...(answer !== undefined ? { answer } : {}), metadata: meta },
    ...(typeof r.solution === 'string' ? { reference: r.solution } : {}),
  };
}

export interface ModelProposerOptions {
  /** The model to ask: the current rollout model (it changes every step) or an endpoint. */
  model: () => RolloutModel | undefined;
  template?: string;
  maxNewTokens: number;
  temperature: number;
}

/** Ask a model for `n` tasks, one prompt per parent in turn; a failed generation is an infra proposal. */
export function modelProposer(o: ModelProposerOptions): Proposer {
  return async (parents, n, ctx) => {
    const model = o.model();
    const picks = Array.from({ length: n }, (_, i) => parents[i % parents.length]!);
    if (!model) return picks.map((parent) => ({ parent, infra: true, error: 'no rollout model yet' }));
    const tok = model.tokenizer;
    let gens;
    try {
      const prompts = picks.map((p) => encodePrompt(tok, taskMessages(fill(o.template ?? DEFAULT_SYNTH_PROMPT, p))));
      gens = await model.generate(prompts, {
        maxNewTokens: o.maxNewTokens,
        temperature: o.temperature,
        seed: ctx.seed,
        stopTokens: stopTokens(tok),
      });
    } catch (e) {
      return picks.map((parent) => ({ parent, infra: true, error: `generation failed: ${(e as Error).message}` }));
    }
    return picks.map((parent, i) => {
      const g = gens[i]!;
      if (g.infraError) return { parent, infra: true, error: g.infraError };
      return parseProposal(parent, g.text);
    });
  };
}
