// Watch taskset files so edits reach a running explorer: each change is diffed by task id into
// added / changed (content hash) / removed tasks, with the validation errors of the new version
// (the extension shows those in the Problems panel).
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { Task } from '../../core/types.js';
import { logger } from '../../core/log.js';
import { TASKSET_EXTENSIONS, loadTaskset } from './load.js';
import type { LoadOptions, TaskRecordError } from './types.js';

const log = logger('taskset');

export interface TasksetChange {
  file: string;
  kind: 'load' | 'change' | 'unlink';
  added: Task[];
  changed: Task[];
  removed: string[];
  /** Every valid task of the new version (empty after unlink). */
  tasks: Task[];
  errors: TaskRecordError[];
  /** Columns of the user's own named like a schema field (load.ts). */
  warnings?: TaskRecordError[];
}

export interface TasksetWatcher {
  /** Resolves once the initial scan is done (its 'load' events have been emitted). */
  ready: Promise<void>;
  /** Current tasks of every watched file. */
  tasks(): Task[];
  close(): Promise<void>;
}

export interface WatchOptions extends LoadOptions {
  /** Milliseconds a file must stay unchanged before it is read (default 100). */
  stableMs?: number;
  /** Use polling (network drives, some containers). */
  usePolling?: boolean;
}

/** Stable hash of a task's content (key order does not matter). */
export function taskHash(t: Task): string {
  const canon = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canon)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, canon((v as Record<string, unknown>)[k])]),
          )
        : v;
  return createHash('sha1')
    .update(JSON.stringify(canon(t)))
    .digest('hex');
}

export function diffTasks(
  before: Map<string, string>,
  after: Task[],
): { added: Task[]; changed: Task[]; removed: string[]; hashes: Map<string, string> } {
  const hashes = new Map<string, string>();
  const added: Task[] = [];
  const changed: Task[] = [];
  for (const t of after) {
    const h = taskHash(t);
    hashes.set(t.id, h);
    const old = before.get(t.id);
    if (old === undefined) added.push(t);
    else if (old !== h) changed.push(t);
  }
  const removed = [...before.keys()].filter((id) => !hashes.has(id));
  return { added, changed, removed, hashes };
}

export function watchTaskset(
  paths: string | string[],
  onChange: (c: TasksetChange) => void,
  opts: WatchOptions = {},
): TasksetWatcher {
  const state = new Map<string, { hashes: Map<string, string>; tasks: Task[] }>();
  // Reads of one file run one after another, so events arrive in file-version order.
  const queue = new Map<string, Promise<void>>();

  const reload = (file: string, kind: TasksetChange['kind']): Promise<void> => {
    const prev = queue.get(file) ?? Promise.resolve();
    const next = prev.then(async () => {
      const before = state.get(file)?.hashes ?? new Map<string, string>();
      let tasks: Task[] = [];
      let errors: TaskRecordError[] = [];
      let warnings: TaskRecordError[] | undefined;
      if (kind !== 'unlink') {
        try {
          const r = await loadTaskset(file, opts);
          tasks = r.tasks;
          errors = r.errors;
          warnings = r.warnings;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') kind = 'unlink';
          else errors = [{ file, line: 1, field: '(file)', message: (e as Error).message }];
        }
      }
      const d = diffTasks(before, tasks);
      if (kind === 'unlink') state.delete(file);
      else state.set(file, { hashes: d.hashes, tasks });
      if (
        kind !== 'load' &&
        d.added.length + d.changed.length + d.removed.length === 0 &&
        errors.length === 0 &&
        before.size > 0
      )
        return;
      onChange({
        file,
        kind,
        added: d.added,
        changed: d.changed,
        removed: d.removed,
        tasks,
        errors,
        ...(warnings ? { warnings } : {}),
      });
    });
    const settled = next.catch((e: unknown) => log.error(`watching ${file}: ${(e as Error).message}`));
    queue.set(file, settled);
    return settled;
  };

  const isTaskset = (f: string): boolean => TASKSET_EXTENSIONS.includes(extname(f).toLowerCase());
  // The initial scan is done here after 'ready' rather than through chokidar's initial 'add' events,
  // which awaitWriteFinish can delay past 'ready'.
  const w: FSWatcher = watch(paths, {
    ignoreInitial: true,
    usePolling: opts.usePolling,
    awaitWriteFinish: { stabilityThreshold: opts.stableMs ?? 100, pollInterval: 20 },
  });
  w.on('add', (f) => isTaskset(f) && void reload(f, 'change'));
  w.on('change', (f) => isTaskset(f) && void reload(f, 'change'));
  w.on('unlink', (f) => isTaskset(f) && void reload(f, 'unlink'));
  w.on('error', (e) => log.error(`taskset watcher: ${(e as Error).message}`));
  const ready = new Promise<void>((resolve) =>
    w.once('ready', () => {
      const files: string[] = [];
      for (const [dir, names] of Object.entries(w.getWatched())) {
        for (const name of names) {
          const f = join(dir, name);
          if (isTaskset(f) && existsSync(f) && statSync(f).isFile()) files.push(f);
        }
      }
      void Promise.all(files.map((f) => reload(f, 'load'))).then(() => resolve());
    }),
  );
  return {
    ready,
    tasks: () => [...state.values()].flatMap((s) => s.tasks),
    close: async () => {
      await w.close();
      await Promise.all(queue.values());
    },
  };
}
