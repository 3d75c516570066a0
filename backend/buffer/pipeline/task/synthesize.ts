// `synthesize` (Trinity-RFT's task synthesis): new training tasks made from the run's own tasks
// while it runs. A proposer (a domain augmenter, the rollout model, or an OpenAI-compatible endpoint)
// suggests tasks with a reference solution; each one is checked (the run's reward function on the
// reference) before it enters the taskset, marked with its origin and parent, deduplicated against
// the taskset and bounded per round. The operator is configured in `taskset.pipeline` like the other
// task operators; its `apply` leaves the loaded pool as it is (synthesis happens per explore step,
// driven by coordinator/task-synthesis.ts). The buffer imports no explorer: the proposer and the
// reference check are injected by the coordinator.
import { z } from 'zod';
import type { Task } from '../../../core/types.js';
import { normalisePrompt } from './dedupe.js';
import type { OperatorSpec } from './operator-spec.js';
import { taskText } from './text.js';
import type { TaskOperator, TaskPipelineDeps } from './types.js';

export const SYNTH_PROPOSERS = ['augment', 'model', 'endpoint'] as const;
export type SynthProposerKind = (typeof SYNTH_PROPOSERS)[number];
export type SynthOrigin = `synth:${SynthProposerKind}`;

const endpoint = z
  .object({
    base_url: z.string().url(),
    model: z.string(),
    /** Name of the environment variable that holds the API key (never the key itself). */
    api_key_env: z.string().optional(),
    /** Per request, the whole reply included (a reply that trickles in is cut off at this time). */
    timeout_ms: z.number().int().positive().default(60_000),
    /** Longest reply read (bytes); a longer one is a failed proposal, counted, read no further. */
    max_reply_bytes: z
      .number()
      .int()
      .positive()
      .default(1 << 20),
  })
  .strict();

export const synthParams = z
  .object({
    proposer: z.enum(SYNTH_PROPOSERS),
    /** Most new tasks accepted per synthesis round. */
    per_step: z.number().int().positive().default(4),
    /** Proposals asked for per round (default 2 x per_step); refused ones count against it. */
    attempts: z.number().int().positive().optional(),
    /** A round after every `every`-th explore step. */
    every: z.number().int().positive().default(1),
    /** Most synthesized tasks the run keeps; no round runs after that. */
    max_total: z.number().int().positive().default(200),
    /** A reference solution is accepted when the reward function says correct (else reward >= min_reward). */
    min_reward: z.number().default(1),
    /** model / endpoint: the instruction, with {prompt} and {answer} of the parent task filled in. */
    prompt: z.string().min(1).optional(),
    /** model / endpoint: tokens of each proposal and the sampling temperature. */
    max_new_tokens: z.number().int().positive().optional(),
    temperature: z.number().min(0).optional(),
    endpoint: endpoint.optional(),
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.proposer === 'endpoint' && !p.endpoint)
      ctx.addIssue({
        code: 'custom',
        path: ['endpoint'],
        message: 'required with proposer endpoint ({base_url, model})',
      });
    if (p.proposer !== 'endpoint' && p.endpoint)
      ctx.addIssue({
        code: 'custom',
        path: ['endpoint'],
        message: `read with proposer endpoint only (proposer is ${p.proposer})`,
      });
    if (p.proposer === 'augment')
      for (const k of ['prompt', 'max_new_tokens', 'temperature'] as const)
        if (p[k] !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: [k],
            message: 'read with proposer model or endpoint only (an augmenter asks no model)',
          });
  });
export type SynthParams = z.infer<typeof synthParams>;

/** What a proposer suggests: a new task (no id yet) made from `parent`, with the reference solution to check it by. */
export interface TaskProposal {
  parent: Task;
  task?: Omit<Task, 'id'>;
  /** The response that should earn the reward; a proposal without one is refused as unverifiable. */
  reference?: string;
  /** Why no task came out (a reply that was not a task, no augmenter for this parent). */
  error?: string;
  /** The proposer itself failed (endpoint down): counted, not held against the task. */
  infra?: boolean;
}

export interface ProposeContext {
  step: number;
  seed: number;
}

/** Injected by the coordinator: the augmenter, the rollout model or the endpoint behind one function. */
export type Proposer = (parents: Task[], n: number, ctx: ProposeContext) => Promise<TaskProposal[]>;
/** Injected by the coordinator: the run's reward function on a response (ok = reward computed). */
export type ReferenceScore = (
  task: Task,
  response: string,
) => Promise<{ ok: boolean; correct: boolean; reason?: string }>;

export interface SynthCounts {
  proposed: number;
  accepted: number;
  /** No reference solution to check the task by. */
  unverifiable: number;
  /** The reference did not earn the reward, or an empty response did (the task checks nothing). */
  failed_check: number;
  /** The reward could not be computed, or the proposer failed. */
  unchecked: number;
  /** A reply that was not a task. */
  malformed: number;
  duplicate: number;
}

export const emptyCounts = (): SynthCounts => ({
  proposed: 0,
  accepted: 0,
  unverifiable: 0,
  failed_check: 0,
  unchecked: 0,
  malformed: 0,
  duplicate: 0,
});

export interface SynthRound {
  tasks: Task[];
  counts: SynthCounts;
  /** One line per refused proposal (first few), for the log. */
  refusals: string[];
}

export const isSynthesized = (t: Task): boolean =>
  typeof t.metadata?.origin === 'string' && (t.metadata.origin as string).startsWith('synth:');

/** The bounded, checked, deduplicated step of synthesis; one per run (the coordinator keeps it). */
export class TaskSynthesizer {
  private readonly keys = new Set<string>();
  private total = 0;

  constructor(
    readonly params: SynthParams,
    private readonly propose: Proposer,
    private readonly score: ReferenceScore,
  ) {}

  /** Tasks a new one must differ from (the taskset, the eval set, earlier synthesized ones). */
  know(tasks: Task[]): void {
    for (const t of tasks) {
      this.keys.add(normalisePrompt(taskText(t)));
      if (isSynthesized(t)) this.total++;
    }
  }

  get synthesized(): number {
    return this.total;
  }

  /** Whether explore step `step` is followed by a round. */
  due(step: number): boolean {
    return (step + 1) % this.params.every === 0 && this.total < this.params.max_total;
  }

  async round(parents: Task[], step: number, seed: number): Promise<SynthRound> {
    const counts = emptyCounts();
    const refusals: string[] = [];
    const room = Math.min(this.params.per_step, this.params.max_total - this.total);
    if (room <= 0 || parents.length === 0) return { tasks: [], counts, refusals };
    const proposals = await this.propose(parents, this.params.attempts ?? 2 * this.params.per_step, { step, seed });
    const accepted: Task[] = [];
    const refuse = (kind: Exclude<keyof SynthCounts, 'proposed' | 'accepted'>, p: TaskProposal, why: string) => {
      counts[kind]++;
      if (refusals.length < 8) refusals.push(`from ${p.parent.id}: ${kind}: ${why}`);
    };
    for (const p of proposals) {
      if (accepted.length >= room) break;
      counts.proposed++;
      if (!p.task) {
        refuse(p.infra ? 'unchecked' : 'malformed', p, p.error ?? 'no task');
        continue;
      }
      if (p.reference === undefined || p.reference.trim() === '') {
        refuse('unverifiable', p, 'no reference solution to check it by');
        continue;
      }
      const key = normalisePrompt(taskText({ ...p.task, id: '' }));
      if (key === '' || this.keys.has(key)) {
        refuse('duplicate', p, key === '' ? 'empty prompt' : 'the taskset has this prompt');
        continue;
      }
      const task: Task = {
        ...p.task,
        id: `${p.parent.id}~s${step}.${accepted.length}`,
        metadata: {
          ...p.task.metadata,
          origin: `synth:${this.params.proposer}` satisfies SynthOrigin,
          parent: p.parent.id,
          synth_step: step,
          reference: p.reference,
        },
      };
      const ref = await this.score(task, p.reference);
      if (!ref.ok) {
        refuse('unchecked', p, ref.reason ?? 'the reward could not be computed');
        continue;
      }
      if (!ref.correct) {
        refuse('failed_check', p, 'the reference solution does not earn the reward');
        continue;
      }
      // A task an empty answer passes checks nothing (e.g. a proposal whose answer field is empty).
      const blank = await this.score(task, '');
      if (!blank.ok || blank.correct) {
        refuse('failed_check', p, 'an empty response earns the reward');
        continue;
      }
      this.keys.add(key);
      accepted.push(task);
    }
    counts.accepted = accepted.length;
    this.total += accepted.length;
    return { tasks: accepted, counts, refusals };
  }
}

/** The `synthesize` step of a task pipeline config, with its path; undefined when there is none. */
export function findSynthStep(pipeline: unknown, base: string): { params: SynthParams; path: string } | undefined {
  if (!Array.isArray(pipeline)) return undefined;
  const k = pipeline.findIndex(
    (s) => typeof s === 'object' && s !== null && (s as { name?: unknown }).name === 'synthesize',
  );
  if (k < 0) return undefined;
  const { name: _name, ...params } = pipeline[k] as Record<string, unknown>;
  return { params: synthParams.parse(params), path: `${base}[${k}]` };
}

export const synthesize: OperatorSpec<TaskOperator, TaskPipelineDeps> = {
  summary:
    'make new tasks from the run\u2019s tasks each explore step (augmenter, rollout model or endpoint), each checked by the reward on a reference solution',
  params: synthParams,
  // The loaded pool passes through; rounds run after explore steps (coordinator/task-synthesis.ts).
  create: () => ({ apply: (tasks) => tasks }),
};
