// Task synthesis in a run: the `synthesize` step of `taskset.pipeline` made into a hook the explorer
// calls after each explore step, in every local placement (one process, the explorer process,
// explore mode), and a distributed trainer after each trained batch (its jobs then take the new tasks). The coordinator injects what the buffer's synthesizer may not import: the proposer
// (augmenter, the current rollout model, or an OpenAI-compatible endpoint) and the run's reward as
// the reference check. Accepted tasks go into the buffer's task table (so a resumed run or the next
// stage's explorer loads the same ones, never regenerates them) and into the task feed.
import type { RunConfig } from '../core/config.js';
import type { Task } from '../core/types.js';
import { InputError } from '../core/errors.js';
import { logger } from '../core/log.js';
import type { ExperienceStore } from '../buffer/storage/index.js';
import {
  findSynthStep,
  isSynthesized,
  TaskSynthesizer,
  type Proposer,
  type SynthCounts,
} from '../buffer/pipeline/task/synthesize.js';
import { OpenAIRolloutModel } from '../explorer/openai-model.js';
import { augmentProposer, modelProposer } from '../explorer/task-proposers.js';
import type { RewardFn, RolloutModel } from '../explorer/workflow.js';
import type { Tokenizer } from '../model/tokenizer/types.js';
import type { TaskFeed, TaskPools } from './setup/tasks.js';

const log = logger('synthesize');

/** The synthesized tasks a run stored (resume, the next stage's explorer), in the order they were made. */
export async function storedSynthesizedTasks(store: ExperienceStore, runId: string): Promise<Task[]> {
  return (await store.listTasks(runId)).filter(isSynthesized);
}

export interface SynthesisHook {
  /** After explore step `step` (its tasks, the model that explored them). */
  afterStep(tasks: Task[], model: RolloutModel, step: number): Promise<void>;
  readonly synthesizer: TaskSynthesizer;
}

export interface SynthesisOptions {
  runId: string;
  store: ExperienceStore;
  /** The local explorer's task source (gets the grown list); a distributed trainer plans jobs from `onAccepted` instead. */
  feed?: TaskFeed;
  pools: Pick<TaskPools, 'train' | 'eval' | 'reward'>;
  tok: Tokenizer;
  /** Accepted tasks, after they are stored. */
  onAccepted?: (tasks: Task[]) => void;
  /** One record per round (metrics.jsonl: kind `synthesize`). */
  onRound?: (r: { step: number; added: number; total: number } & SynthCounts) => void;
}

/** The run's synthesis hook, or undefined when `taskset.pipeline` has no `synthesize` step. */
export function taskSynthesis(cfg: RunConfig, o: SynthesisOptions): SynthesisHook | undefined {
  let found;
  try {
    found = findSynthStep(cfg.taskset.pipeline, 'taskset.pipeline');
  } catch (e) {
    throw new InputError(`taskset.pipeline: synthesize: ${(e as Error).message}`, { field: 'taskset.pipeline' });
  }
  if (!found) return undefined;
  const p = found.params;
  let current: RolloutModel | undefined;
  let propose: Proposer;
  const sampling = { maxNewTokens: p.max_new_tokens ?? 256, temperature: p.temperature ?? 1, template: p.prompt };
  if (p.proposer === 'augment') propose = augmentProposer;
  else if (p.proposer === 'model') propose = modelProposer({ ...sampling, model: () => current });
  else {
    const ep = p.endpoint!;
    const apiKey = ep.api_key_env ? process.env[ep.api_key_env] : undefined;
    if (ep.api_key_env && !apiKey)
      log.warn(`${found.path}.endpoint.api_key_env: $${ep.api_key_env} is not set; asking without a key`);
    const endpoint = new OpenAIRolloutModel({
      baseUrl: ep.base_url,
      model: ep.model,
      tokenizer: o.tok,
      apiKey,
      timeoutMs: ep.timeout_ms,
      maxReplyBytes: ep.max_reply_bytes,
      maxRetries: 1,
    });
    propose = modelProposer({ ...sampling, model: () => endpoint });
  }
  const reward: RewardFn = o.pools.reward;
  const synthesizer = new TaskSynthesizer(p, propose, async (task, response) => {
    const r = await reward(task, response);
    if (r.status !== 'ok') return { ok: false, correct: false, reason: r.reason };
    const c = r.details?.correct;
    return {
      ok: true,
      correct: typeof c === 'number' || typeof c === 'boolean' ? Number(c) === 1 : r.reward >= p.min_reward,
    };
  });
  // New tasks differ from the taskset, the held-out eval set (no leak into training) and each other.
  synthesizer.know([...o.pools.train, ...o.pools.eval]);
  // A step already synthesized (before a resume, or re-explored to fill a batch) gets no second round.
  let last = Math.max(-1, ...o.pools.train.filter(isSynthesized).map((t) => Number(t.metadata?.synth_step ?? -1)));
  return {
    synthesizer,
    async afterStep(tasks, model, step) {
      if (step <= last || !synthesizer.due(step)) return;
      last = step;
      current = model;
      // Parents: this step's tasks as they came from the user's taskset or a generator; a synthesized
      // task stands for its parent (a chain of proposals would drift away from the data).
      const byId = new Map(o.pools.train.map((t) => [t.id, t]));
      const roots = tasks
        .map((t) => (isSynthesized(t) ? byId.get(String(t.metadata?.parent)) : t))
        .filter((t): t is Task => t !== undefined);
      const parents = [...new Map(roots.map((t) => [t.id, t])).values()];
      const r = await synthesizer.round(parents, step, cfg.seed * 1_000_003 + step);
      if (r.tasks.length) {
        await o.store.putTasks(o.runId, r.tasks);
        o.pools.train = [...o.pools.train, ...r.tasks];
        o.feed?.selector.setTasks(o.pools.train);
        o.onAccepted?.(r.tasks);
      }
      const refused = r.counts.proposed - r.counts.accepted;
      if (r.tasks.length || refused)
        log.info(
          `step ${step}: ${r.counts.accepted} task(s) synthesized (${p.proposer}), ${refused} refused${r.refusals.length ? `: ${r.refusals.slice(0, 3).join('; ')}` : ''}; ${synthesizer.synthesized} in all`,
        );
      o.onRound?.({ step, added: r.tasks.length, total: synthesizer.synthesized, ...r.counts });
    },
  };
}
