// The explorer half of a run, built in one place for every placement: the experience pipeline (raw ->
// verified, with the advantages of the stage being run) and the explorer that runs the workflow; for a
// placement that picks its own tasks (in-process, explorer process, explore mode) also the task feed
// (selector), task synthesis and the live taskset/experts files (`openExplorerHalf`). A distributed
// explorer gets its tasks from leased jobs and acks what it made: it opens the same half with those
// two seams (`openLeasedExplorerHalf`: a task source, a sink, and what the job adds to each row).
import type { RunConfig } from '../core/config.js';
import type { Experience } from '../core/types.js';
import type { ExperienceStore } from '../buffer/storage/index.js';
import type { SelectorState } from '../buffer/taskset/index.js';
import { pendingPartials } from '../buffer/partials.js';
import type { ExperienceSink, ExplorerOptions, TaskSource } from '../explorer/explorer.js';
import { FillingExplorer } from '../explorer/filling-explorer.js';
import type { RewardFn } from '../explorer/workflow.js';
import { workflows } from '../explorer/workflows/index.js';
import type { Tokenizer } from '../model/tokenizer/types.js';
import type { MetricsLog } from './monitor.js';
import { TaskFeed, type TaskPools } from './setup/tasks.js';
import { experiencePipeline, explorerOptions, processExperiences } from './setup/explorer.js';
import type { ExperiencePipeline } from '../buffer/pipeline/experience/index.js';
import { storedSynthesizedTasks, taskSynthesis } from './task-synthesis.js';
import { watchRunFiles, type LiveFiles } from './live.js';

/** The algorithm whose advantages fresh experiences get (the stage being run). */
export type AlgorithmOf = () => { name: string; params: Record<string, unknown> };

interface ExplorerParts {
  runId: string;
  reward: RewardFn;
  tasks: TaskSource;
  sink: ExperienceSink;
  seed: number;
  /** Raw -> verified: the run's experience pipeline (`experiencePipeline`), and what else a step's batch goes through. */
  process: (raw: Experience[]) => Experience[];
  afterStep?: ExplorerOptions['afterStep'];
}

/** The run's explorer: its workflow and sampling settings (explorer.*), the given tasks, pipeline and sink. */
function makeExplorer(cfg: RunConfig, p: ExplorerParts): FillingExplorer {
  return new FillingExplorer(workflows.get(cfg.workflow.name), p.reward, p.tasks, p.sink, {
    ...explorerOptions(cfg, p.runId, p.seed),
    process: p.process,
    afterStep: p.afterStep,
  });
}

export interface ExplorerHalfOptions {
  cfg: RunConfig;
  runId: string;
  store: ExperienceStore;
  /** The run's tasks: its train pool grows by the tasks synthesized earlier in the run, as they were made. */
  pools: TaskPools;
  tok: Tokenizer;
  metrics: MetricsLog;
  algorithm: AlgorithmOf;
  seed: number;
  /** Continue the selector where the run left it (a resume, a later stage's explorer process). */
  restore: boolean;
  /**
   * Keep the next explore step's number in the buffer after each step and read it back on `restore`:
   * a resume continues it, so group ids (run:split:step:task) are never reused.
   */
  numberSteps?: boolean;
  /** Fields every metrics record it writes carries (the explorer process: the stage's name). */
  tag?: Record<string, unknown>;
  /** Watch the taskset and experts files (every placement that trains; explore mode does not). */
  watch: boolean;
}

export interface ExplorerHalf {
  explorer: FillingExplorer;
  /** Stops watching the run's files. */
  close(): Promise<void>;
}

/** Opens the explorer half of a run with its own task feed, ready to explore (its live files watched). */
export async function openExplorerHalf(o: ExplorerHalfOptions): Promise<ExplorerHalf> {
  const { cfg, runId, store, pools, tok, metrics } = o;
  const tag = o.tag ?? {};
  // Raw -> verified: validity, reward filters, then the stage's group advantages.
  const pipeline = experiencePipeline(cfg, o.algorithm);
  // Tasks synthesized before (a resume, an earlier stage's explorer) are read back as they were made.
  pools.train = [...pools.train, ...(await storedSynthesizedTasks(store, runId))];
  const feed = new TaskFeed(cfg, pools.train);
  // The selector continues where it stopped (order, success statistics).
  if (o.restore) feed.restore(await store.getState<SelectorState>(runId, 'selector'));
  const synth = taskSynthesis(cfg, {
    runId,
    store,
    feed,
    pools,
    tok,
    onRound: (r) => metrics.write({ kind: 'synthesize', ...tag, ...r }),
  });
  const explorer: FillingExplorer = makeExplorer(cfg, {
    runId,
    reward: pools.reward,
    tasks: feed,
    sink: {
      // Partial rollouts: the step's stored partial rows are read back and written again with it.
      pending: () => pendingPartials(store, runId),
      append: async (exps, opts) => {
        await store.appendExperiences(exps, opts);
        await store.setState(runId, 'selector', feed.state());
        if (o.numberSteps) await store.setState(runId, 'explore_next_step', explorer.step + 1);
      },
    },
    seed: o.seed,
    process: processExperiences(pipeline, feed, (counts) =>
      metrics.write({ kind: 'pipeline', ...tag, step: explorer.step, ...counts }),
    ),
    afterStep: synth?.afterStep,
  });
  if (o.restore && o.numberSteps) explorer.step = (await store.getState<number>(runId, 'explore_next_step')) ?? 0;
  let live: LiveFiles | undefined;
  if (o.watch) {
    // Saving the taskset or experts file while the run goes on feeds the next explore steps.
    live = watchRunFiles(cfg, { runId, feed, pools, tok, store });
    await live.ready;
  }
  return { explorer, close: async () => live?.close() };
}

/** The seams of a distributed explorer: tasks from its leased job, what it makes kept for the job's ack. */
export interface LeasedSeams {
  cfg: RunConfig;
  runId: string;
  reward: RewardFn;
  /** The run's experience pipeline (`experiencePipeline`), the one its partial-rollout jobs use too. */
  pipeline: ExperiencePipeline;
  seed: number;
  tasks: TaskSource;
  sink: ExperienceSink;
  /** The job's ids and provenance on each verified row. */
  relabel: (exps: Experience[]) => Experience[];
}

/** The explorer half of a distributed explorer: the run's pipeline and explorer, over its leased jobs. */
export function openLeasedExplorerHalf(o: LeasedSeams): ExplorerHalf {
  // The same experience pipeline as every placement: a filtered experience is never acked.
  const verify = processExperiences(o.pipeline, undefined);
  const explorer = makeExplorer(o.cfg, {
    runId: o.runId,
    reward: o.reward,
    tasks: o.tasks,
    sink: o.sink,
    seed: o.seed,
    process: (raw) => o.relabel(verify(raw)),
  });
  return { explorer, close: async () => undefined };
}
