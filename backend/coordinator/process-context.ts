// What an explorer or trainer process of a run needs, rebuilt from the run folder alone: the config
// the coordinator wrote (config.yaml), the run's tokenizer, the task pools (setup/tasks.ts), the buffer, metrics.
import { ConflictError, InputError } from '../core/errors.js';
import { rmSync, writeFileSync } from 'node:fs';
import { checkPidFile, pidFileText, readPidFile } from '../core/pid-file.js';
import { dirname, join, resolve } from 'node:path';
import type { RunConfig } from '../core/config.js';
import { loadTokenizer, type Tokenizer } from '../model/tokenizer/index.js';
import { openStore, type ExperienceStore } from '../buffer/storage/index.js';
import type { ComponentActivity } from '../core/component-state.js';
import { MetricsLog } from './monitor.js';
import { openEventFile } from './tensorboard.js';
import { logger } from '../core/log.js';

const log = logger('monitor');
import { loadWorkspaceCode } from './workspace-code.js';
import { readRunFolderConfig } from './load-config.js';
import { loadTasks, type TaskPools } from './setup/tasks.js';
import { stagesOf, type Stage } from './setup/trainer.js';

export { stagesOf, type Stage };

export interface ProcessArgs {
  runDir: string;
  runId: string;
  store: string;
  stage: number;
}

export interface ProcessContext extends ProcessArgs {
  cfg: RunConfig;
  stages: Stage[];
  tok: Tokenizer;
  pools: TaskPools;
  db: ExperienceStore;
  metrics: MetricsLog;
  /** The run registry's workspace (`<ws>/.rft/runs/<id>` -> `<ws>`). */
  workspace: string;
  /** Current state of the component in the buffer's run_state (read by `rft status` and the UI). */
  setState(component: 'explorer' | 'trainer', state: ComponentActivity, detail?: string): void;
}

export function processArgv(kind: 'explorer-process' | 'trainer-process', a: ProcessArgs): string[] {
  return [kind, a.runDir, '--run-id', a.runId, '--store', a.store, '--stage', String(a.stage)];
}

export async function openProcessContext(a: ProcessArgs, component: 'explorer' | 'trainer'): Promise<ProcessContext> {
  const runDir = resolve(a.runDir);
  const cfg = readRunFolderConfig(runDir);
  const stages = stagesOf(cfg);
  if (!(a.stage >= 0 && a.stage < stages.length))
    throw new InputError(`--stage ${a.stage}: the config has ${stages.length} stage(s)`);
  // workflow.file: the run passes its trust in the environment (placement/child-processes.ts).
  await loadWorkspaceCode(cfg);
  const db = await openStore(a.store);
  let pending = Promise.resolve();
  return {
    ...a,
    runDir,
    cfg,
    stages,
    tok: loadTokenizer(runDir),
    pools: await loadTasks(cfg),
    db,
    // monitor.tensorboard: each process its own event file in the run's folder.
    metrics: new MetricsLog(
      join(runDir, 'metrics.jsonl'),
      openEventFile(cfg.monitor.tensorboard, runDir, a.runId, component, (m) => log.warn(m)),
    ),
    workspace: dirname(dirname(dirname(runDir))),
    setState(component, state, detail) {
      // Serialised and best effort: a state line must never stop the loop.
      pending = pending
        .then(() =>
          db.setState(a.runId, `state:${component}`, {
            state,
            detail: detail ?? null,
            at: Date.now(),
            pid: process.pid,
          }),
        )
        .catch(() => undefined);
    },
  };
}

/** Exit when the coordinator is gone (a kill -9 of it must not leave orphans training on). */
export function exitWithParent(onGone: () => void): void {
  const parent = process.ppid;
  const t = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(t);
      onGone();
    }
  }, 1000);
  t.unref();
}

/**
 * One explorer and one trainer per run: `<run>/<component>.pid`. A worker left over from a killed
 * coordinator exits within a second (exitWithParent); a new one waits for it instead of training beside it.
 */
export async function acquireComponentLock(runDir: string, component: string, waitMs = 15_000): Promise<() => void> {
  const file = join(runDir, `${component}.pid`);
  const deadline = Date.now() + waitMs;
  for (;;) {
    // A pid now held by an unrelated process (the file outlived a kill -9 or a reboot) is no worker.
    const c = checkPidFile(file, component);
    if (c.state === 'gone' || c.pid === process.pid) break;
    if (Date.now() > deadline)
      throw new ConflictError(
        `${file}: another ${component} (pid ${c.pid}) is still running for this run${c.state === 'unverified' ? ` (${c.why})` : ''}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
  writeFileSync(file, pidFileText(component));
  return () => {
    try {
      const r = readPidFile(file);
      if (r && r !== 'garbage' && r.pid === process.pid) rmSync(file, { force: true });
    } catch {
      // already gone
    }
  };
}
