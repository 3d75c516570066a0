// RunRegistryPort over the workspace's lowdb run registry (.rft/runs.json). Opened lazily and only
// when the file exists, so looking at a workspace never creates `.rft/` in it.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { RunRegistry, type RunRecord } from '../../buffer/runs.js';
import type { RunInfo } from '../../core/protocol.js';
import type { RunRegistryPort } from '../ports.js';
import { describeRunModel } from '../../model/run-model.js';
import { MetricsLog, runEngines } from '../../coordinator/monitor.js';
import { tensorboardDir } from '../../coordinator/tensorboard.js';
import { resumeState } from '../../coordinator/resume-state.js';

/** Where the run's event files are (monitor.tensorboard), once its first process wrote one. */
function tensorboardInfo(r: RunRecord): { tensorboardDir?: string } {
  const setting = (r.config as { monitor?: { tensorboard?: boolean | string } } | undefined)?.monitor?.tensorboard;
  const dir = tensorboardDir(setting ?? true, r.dir, r.id);
  return dir && existsSync(dir) ? { tensorboardDir: dir } : {};
}

/** Whether Resume can work, and whether its config file changed since it started (resume-state.ts). */
function resumeInfo(r: RunRecord): Pick<RunInfo, 'resumable' | 'resumeRefusal' | 'configChanged'> {
  const st = resumeState(r);
  return {
    resumable: st.resumable,
    ...(st.why ? { resumeRefusal: st.why } : {}),
    ...(st.configChanged ? { configChanged: st.configChanged } : {}),
  };
}

export function runInfo(r: RunRecord): RunInfo & { config?: unknown } {
  const model = describeRunModel(r.config);
  return {
    id: r.id,
    name: r.name,
    status: r.status,
    step: r.lastStep,
    ...(r.configPath ? { configPath: r.configPath } : {}),
    bufferPath: r.dbPath,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    checkpoints: r.checkpoints.map((c) => ({ version: c.version, path: c.path, step: c.step })),
    ...(r.statusReason ? { statusReason: r.statusReason } : {}),
    ...resumeInfo(r),
    // Written when a run ends (stopped, paused, completed; monitor.report).
    ...(existsSync(join(r.dir, 'report.html')) ? { reportPath: join(r.dir, 'report.html') } : {}),
    ...tensorboardInfo(r),
    config: r.config,
    // The real model (a model.checkpoint's architecture and size), not the preset defaults the validated config carries.
    ...(model ? { model } : {}),
  };
}

export class WorkspaceRuns implements RunRegistryPort {
  private reg: Promise<RunRegistry> | undefined;
  constructor(readonly workspace: string) {}

  private async registry(): Promise<RunRegistry | undefined> {
    if (!this.reg) {
      if (!existsSync(join(this.workspace, '.rft', 'runs.json'))) return undefined;
      this.reg = RunRegistry.open(this.workspace);
      this.reg.catch(() => (this.reg = undefined));
    }
    return this.reg;
  }

  async list(): Promise<RunInfo[]> {
    const reg = await this.registry();
    return reg ? (await reg.list()).map((r) => runInfo(r)) : [];
  }

  async get(runId: string): Promise<(RunInfo & { config?: unknown }) | null> {
    const r = await (await this.registry())?.get(runId);
    if (!r) return null;
    // What the run computes on, as its processes recorded it (the dashboard shows it).
    const engines = runEngines(new MetricsLog(join(r.dir, 'metrics.jsonl')).read());
    return { ...runInfo(r), ...(engines ? { engines } : {}) };
  }
}
