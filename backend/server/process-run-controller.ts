// The RunController the server uses: each run is an `rft run` / `rft resume` child process of its
// own (a crash of a run never takes the server down, and a run outlives an editor reload); state is
// read back from the workspace's run registry, the run's pid file and its metrics.jsonl.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MetricsPoint, RunInfo } from '../core/protocol.js';
import { RunRegistry } from '../buffer/runs.js';
import { MetricsLog } from '../coordinator/monitor.js';
import type { Disposable, RunController } from './ports.js';
import { runInfo } from './adapters/run-registry.js';
import { NotFoundError } from './errors.js';

// backend/server/*.ts and the bundle dist/backend/serve.mjs both sit two folders below the root.
const CLI = fileURLToPath(new URL('../../bin/rft.mjs', import.meta.url));

export class ProcessRunController implements RunController {
  constructor(
    readonly workspace: string,
    private readonly cli = CLI,
  ) {}

  private registry(): Promise<RunRegistry> {
    return RunRegistry.open(this.workspace);
  }

  private spawnCli(args: string[], logName: string): void {
    const logs = join(this.workspace, '.rft', 'logs');
    mkdirSync(logs, { recursive: true });
    const out = openSync(join(logs, logName), 'a');
    const child = spawn(process.execPath, [this.cli, ...args, '--workspace', this.workspace, '--quiet'], {
      cwd: this.workspace,
      stdio: ['ignore', out, out],
      detached: true,
    });
    child.unref();
  }

  private async waitFor(id: string, pred: (r: RunInfo) => boolean, ms: number): Promise<RunInfo> {
    const end = Date.now() + ms;
    for (;;) {
      const rec = await (await this.registry()).get(id);
      if (rec && (pred(runInfo(rec)) || Date.now() > end)) return runInfo(rec);
      if (!rec && Date.now() > end) throw new NotFoundError(`run '${id}' did not appear in ${this.workspace}/.rft/runs.json (see .rft/logs/${id}.log)`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async start(configPath: string): Promise<RunInfo> {
    const file = resolve(this.workspace, configPath);
    if (!existsSync(file)) throw new NotFoundError(`config '${configPath}' not found`);
    const id = `run-${new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)}-${Math.random().toString(36).slice(2, 6)}`;
    this.spawnCli(['run', file, '--run-id', id], `${id}.log`);
    return this.waitFor(id, () => true, 60_000);
  }

  async stop(runId: string): Promise<RunInfo> {
    const rec = await (await this.registry()).get(runId);
    if (!rec) throw new NotFoundError(`no run '${runId}'`);
    const pidFile = join(rec.dir, 'run.pid');
    if (existsSync(pidFile)) {
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGTERM');
      } catch {
        // already gone
      }
    }
    return this.waitFor(runId, (r) => r.status !== 'running', 120_000);
  }

  async resume(runId: string): Promise<RunInfo> {
    const rec = await (await this.registry()).get(runId);
    if (!rec) throw new NotFoundError(`no run '${runId}'`);
    this.spawnCli(['resume', runId], `${runId}.log`);
    return this.waitFor(runId, (r) => r.status === 'running', 60_000);
  }

  async evaluate(checkpoint: string, taskset: string): Promise<{ accuracy: number; tasks: number }> {
    const out = await new Promise<string>((res, rej) => {
      const c = spawn(process.execPath, [this.cli, 'eval', checkpoint, '--taskset', taskset], { cwd: this.workspace });
      let s = '';
      let e = '';
      c.stdout.on('data', (d) => (s += d));
      c.stderr.on('data', (d) => (e += d));
      c.on('close', (code) => (code === 0 ? res(s) : rej(new Error(`rft eval failed: ${e.trim().split('\n').slice(-3).join(' ')}`))));
    });
    const r = JSON.parse(out.trim().split('\n').pop()!) as { accuracy: number; n: number };
    return { accuracy: r.accuracy, tasks: r.n };
  }

  async metrics(runId: string, sinceStep = -1): Promise<MetricsPoint[]> {
    const rec = await (await this.registry()).get(runId);
    if (!rec) throw new NotFoundError(`no run '${runId}'`);
    return toPoints(runId, new MetricsLog(join(rec.dir, 'metrics.jsonl')).read()).filter((p) => p.step > sinceStep);
  }

  onMetrics(cb: (m: MetricsPoint) => void): Disposable {
    // Poll the registry's running runs and forward new metric points.
    const seen = new Map<string, number>();
    const timer = setInterval(async () => {
      try {
        for (const r of await (await this.registry()).list()) {
          if (r.status !== 'running') continue;
          const pts = await this.metrics(r.id, seen.get(r.id) ?? -1);
          for (const p of pts) cb(p);
          if (pts.length) seen.set(r.id, pts[pts.length - 1]!.step);
        }
      } catch {
        // the registry may be mid-write; try again next tick
      }
    }, 2000);
    return { dispose: () => clearInterval(timer) };
  }
}

/** Metrics records -> one point per trainer step, with explore / eval / state values merged in. */
export function toPoints(runId: string, recs: ReturnType<MetricsLog['read']>): MetricsPoint[] {
  const byStep = new Map<number, MetricsPoint>();
  for (const r of recs) {
    if (typeof r.step !== 'number') continue;
    const p = byStep.get(r.step) ?? { runId, step: r.step, at: r.t, values: {} };
    const put = (k: string, v: unknown) => {
      if (typeof v === 'number' && Number.isFinite(v)) p.values[k] = v;
    };
    if (r.kind === 'train') {
      for (const k of ['loss', 'pg_loss', 'sft_loss', 'grpo_loss', 'kl_loss', 'entropy_loss', 'grad_norm', 'lr', 'tokens_per_s', 'staleness']) put(k.includes('loss') && k !== 'loss' ? `loss/${k}` : k, r[k]);
    } else if (r.kind === 'explore') put('reward', r.reward_mean);
    else if (r.kind === 'eval') put('eval_accuracy', r.accuracy);
    else if (r.kind === 'state') {
      put('idle/trainer', r.trainer_idle);
      put('idle/explorer', r.explorer_idle);
    }
    byStep.set(r.step, p);
  }
  return [...byStep.values()].sort((a, b) => a.step - b.step);
}
