// Live tasksets: while a run goes on, saving the taskset file adds, changes and removes tasks for
// the next explore steps (the selector gets the new list; new tasks go into the buffer's task
// table), and a new line in the experts file becomes an expert experience in the buffer. Bad lines
// are logged as FILE:LINE: field and skipped; the run goes on. Used by the explorer of every
// placement with a local file system (one process, the explorer process). A dataset folder (hub
// cache, split shards) is read once: its files are a download, not edited, and other splits live there.
import { statSync } from 'node:fs';
import type { RunConfig } from '../core/config.js';
import type { Task } from '../core/types.js';
import { logger } from '../core/log.js';
import type { Tokenizer } from '../model/tokenizer/index.js';
import { formatTaskError, watchTaskset, type TasksetChange, type TasksetWatcher } from '../buffer/taskset/index.js';
import type { ExperienceStore } from '../buffer/storage/index.js';
import { rewardFns } from '../explorer/rewards/index.js';
import { isSynthesized } from '../buffer/pipeline/task/synthesize.js';
import { expertExperience, taskPipeline, withoutHeldOut, type TaskFeed, type TaskPools } from './setup/tasks.js';

const log = logger('live');

export interface LiveFiles {
  /** The paths watched (a dataset folder is not). */
  watching: string[];
  ready: Promise<void>;
  close(): Promise<void>;
}

function hasReward(cfg: RunConfig, t: Task): boolean {
  const own = t.metadata?.reward;
  if (own === undefined) return cfg.workflow.reward !== undefined;
  return typeof own === 'string' && (rewardFns.has(own) || own.includes(':') || own === 'environment');
}

function logErrors(c: TasksetChange): void {
  for (const e of c.errors.slice(0, 20)) log.warn(`${formatTaskError(e)} (skipped)`);
}

/** Watch the run's taskset and experts files (when they are files); `onEvent` sees each applied change (tests, metrics). */
export function watchRunFiles(
  cfg: RunConfig,
  o: {
    runId: string;
    feed: TaskFeed;
    pools: TaskPools;
    tok: Tokenizer;
    store: ExperienceStore;
    onEvent?: (e: {
      file: string;
      tasks: number;
      added: number;
      removed: number;
      experts: number;
      errors: number;
    }) => void;
  },
): LiveFiles {
  const watchers: TasksetWatcher[] = [];
  const watching: string[] = [];
  const ts = cfg.taskset;
  const isFile = (p: string) => {
    try {
      return statSync(p).isFile();
    } catch {
      return true; // gone: the watcher says so
    }
  };
  if (ts.path && isFile(ts.path)) {
    watching.push(ts.path);
    const pipeline = ts.pipeline ? taskPipeline(ts.pipeline, 'taskset.pipeline') : undefined;
    watchers.push(
      watchTaskset(
        ts.path,
        (c) => {
          if (c.kind === 'load') return; // the run started with this version
          logErrors(c);
          const valid = c.tasks.filter((t) => hasReward(cfg, t));
          // A held-out eval share stays out of training when the file is saved again.
          const fromFile = withoutHeldOut(o.pools, pipeline ? pipeline.run(valid).tasks : valid);
          if (fromFile.length === 0) {
            log.warn(`${c.file}: no valid task left; the run keeps the previous ${o.pools.train.length}`);
            return;
          }
          // Tasks synthesized during the run stay (they are stored in the buffer, not in the file).
          const tasks = [...fromFile, ...o.pools.train.filter(isSynthesized)];
          o.pools.train = tasks;
          o.feed.selector.setTasks(tasks);
          const fresh = new Set([...c.added, ...c.changed].map((t) => t.id));
          void o.store
            .putTasks(
              o.runId,
              tasks.filter((t) => fresh.has(t.id)),
            )
            .catch((e: unknown) => log.warn(`buffer tasks: ${(e as Error).message}`));
          log.info(
            `${c.file}: ${c.added.length} added, ${c.changed.length} changed, ${c.removed.length} removed; ${tasks.length} task(s) now`,
          );
          o.onEvent?.({
            file: c.file,
            tasks: tasks.length,
            added: c.added.length,
            removed: c.removed.length,
            experts: 0,
            errors: c.errors.length,
          });
        },
        { fields: ts.format, domain: ts.domain, defaultIds: true },
      ),
    );
  }
  const ex = cfg.experts;
  if (ex?.path && isFile(ex.path)) {
    watching.push(ex.path);
    watchers.push(
      watchTaskset(
        ex.path,
        (c) => {
          if (c.kind === 'load') return;
          logErrors(c);
          const fresh = [...c.added, ...c.changed];
          if (fresh.length === 0) return;
          o.pools.experts = c.tasks;
          const exps = fresh.map((t) => expertExperience(o.tok, o.runId, t, o.pools.solve(t)));
          void o.store
            .appendExperiences(exps)
            .then(() => {
              log.info(`${c.file}: ${exps.length} new expert experience(s)`);
              o.onEvent?.({
                file: c.file,
                tasks: c.tasks.length,
                added: exps.length,
                removed: c.removed.length,
                experts: exps.length,
                errors: c.errors.length,
              });
            })
            .catch((e: unknown) => log.warn(`expert experiences: ${(e as Error).message}`));
        },
        { fields: ex.format, domain: ex.domain, role: 'expert', defaultIds: true },
      ),
    );
  }
  return {
    watching,
    ready: Promise.all(watchers.map((w) => w.ready)).then(() => undefined),
    close: async () => {
      await Promise.all(watchers.map((w) => w.close()));
    },
  };
}
