// The RunController the server uses: each run is an `rft run` / `rft resume` child process of its
// own (a crash of a run never takes the server down, and a run outlives an editor reload); state is
// read back from the workspace's run registry, the run's pid file and its metrics.jsonl.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync } from 'node:fs';
import { readRegularFileAsync } from '../core/regular-file.js';
import { join, resolve, sep } from 'node:path';
import type { MetricsPoint, RunInfo } from '../core/protocol.js';
import { livePid, RunLiveError, RunRegistry } from '../buffer/runs.js';
import { signalRun } from '../buffer/run-signal.js';
import { MetricsLog } from '../coordinator/monitor.js';
import type { Disposable, RunController } from './ports.js';
import { runInfo } from './adapters/run-registry.js';
import { ConflictError } from '../core/errors.js';
import { NotFoundError } from './errors.js';
import { InputError } from '../core/errors.js';
import { WorkspacePaths } from './confine.js';
import { packageFile } from '../core/package-root.js';
import { RunPoller, tail, toPoints } from './run-poller.js';

const CLI = packageFile('bin', 'rft.mjs');
const POLL_MS = 1000;

export class ProcessRunController implements RunController {
  private readonly paths: WorkspacePaths;
  constructor(
    readonly workspace: string,
    private readonly cli = CLI,
  ) {
    this.paths = new WorkspacePaths(workspace);
  }

  private registry(): Promise<RunRegistry> {
    return RunRegistry.open(this.workspace);
  }

  /** Where a run's `rft run` / `rft resume` output goes. */
  logFile(runId: string): string {
    return join(this.workspace, '.rft', 'logs', `${runId}.log`);
  }

  async log(runId: string, lines: number): Promise<{ path: string; lines: string[] }> {
    const path = this.logFile(runId);
    if (!existsSync(path)) throw new NotFoundError(`run '${runId}' has no log (${path})`);
    return { path, lines: tail((await readRegularFileAsync(path)).toString('utf8'), lines) };
  }

  private spawnCli(args: string[], logName: string): { exitCode: () => number | null } {
    const logs = join(this.workspace, '.rft', 'logs');
    mkdirSync(logs, { recursive: true });
    const out = openSync(join(logs, logName), 'a');
    const child = spawn(process.execPath, [this.cli, ...args, '--workspace', this.workspace, '--quiet'], {
      cwd: this.workspace,
      stdio: ['ignore', out, out],
      detached: true,
    });
    child.unref();
    let code: number | null = null;
    child.on('exit', (c, sig) => (code = c ?? (sig ? 128 : 1)));
    return { exitCode: () => code };
  }

  private async waitFor(
    id: string,
    pred: (r: RunInfo) => boolean,
    ms: number,
    proc?: { exitCode: () => number | null },
  ): Promise<RunInfo> {
    const end = Date.now() + ms;
    for (;;) {
      const rec = await (await this.registry()).get(id);
      if (rec && (pred(runInfo(rec)) || Date.now() > end)) return runInfo(rec);
      // The process died before registering the run (a bad config, a missing taskset): say why now,
      // from its log, instead of waiting out the timeout.
      const code = proc?.exitCode() ?? null;
      if (!rec && code !== null) {
        const why = existsSync(this.logFile(id))
          ? tail((await readRegularFileAsync(this.logFile(id))).toString('utf8'), 12).join('\n')
          : '';
        throw new InputError(`the run exited (code ${code}) before it started${why ? `:\n${why}` : ''}`, {
          file: `.rft/logs/${id}.log`,
        });
      }
      // It registered and then exited (e.g. failed at once on resume): its status says what happened.
      if (rec && code !== null) {
        await new Promise((r) => setTimeout(r, 200));
        return runInfo((await (await this.registry()).get(id)) ?? rec);
      }
      if (!rec && Date.now() > end)
        throw new NotFoundError(
          `run '${id}' did not appear in ${this.workspace}/.rft/runs.json (see .rft/logs/${id}.log)`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async start(configPath: string): Promise<RunInfo> {
    const file = this.paths.inside(configPath, 'configPath');
    if (!existsSync(file)) throw new NotFoundError(`config '${configPath}' not found`);
    const id = `run-${new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)}-${Math.random().toString(36).slice(2, 6)}`;
    const proc = this.spawnCli(['run', file, '--run-id', id], `${id}.log`);
    return this.waitFor(id, () => true, 60_000, proc);
  }

  async stop(runId: string): Promise<RunInfo> {
    return this.signal(runId, 'SIGTERM');
  }

  /** Like stop (after the current step, with a checkpoint), recorded as paused (`rft pause`). */
  async pause(runId: string): Promise<RunInfo> {
    return this.signal(runId, 'SIGUSR2');
  }

  private async signal(runId: string, signal: 'SIGTERM' | 'SIGUSR2'): Promise<RunInfo> {
    const rec = await (await this.registry()).get(runId);
    if (!rec) throw new NotFoundError(`no run '${runId}'`);
    // Only the run's own live process is signalled; a stale pid file's process is left alone.
    const res = await signalRun(await this.registry(), rec, signal);
    if (!res.sent) {
      if (res.live) throw new ConflictError(res.message);
      const now = (await (await this.registry()).get(runId)) ?? rec;
      return { ...runInfo(now), statusReason: res.message };
    }
    return this.waitFor(runId, (r) => r.status !== 'running', 120_000);
  }

  async resume(runId: string, config?: 'new' | 'kept'): Promise<RunInfo> {
    const rec = await (await this.registry()).get(runId);
    if (!rec) throw new NotFoundError(`no run '${runId}'`);
    const pid = livePid(rec.dir, runId);
    if (pid !== null) throw new ConflictError(new RunLiveError(runId, pid, rec.dir).message);
    // A config file edited since the run started is the user's choice (resume-config.ts): passed on as the CLI's flag.
    const choice = config === 'new' ? ['--use-new-config'] : config === 'kept' ? ['--keep-config'] : [];
    const proc = this.spawnCli(['resume', runId, ...choice], `${runId}.log`);
    const info = await this.waitFor(runId, (r) => r.status === 'running', 60_000, proc);
    // Refused before it ran (its config file changed and no choice was given, the same config refused
    // again): the CLI's own `rft: …` lines at the end of the log are the reason, not the old status.
    const code = proc.exitCode();
    if (info.status !== 'running' && code !== null && code !== 0) {
      const lines = tail((await readRegularFileAsync(this.logFile(runId))).toString('utf8'), 12);
      const at = lines.map((l) => l.startsWith('rft: ')).lastIndexOf(true);
      if (at >= 0) throw new InputError([lines[at]!.slice(5), ...lines.slice(at + 1)].join('\n'));
    }
    return info;
  }

  async evaluate(
    checkpoint: string,
    taskset: string,
    opts: EvaluateOptions = {},
  ): Promise<{ accuracy: number; tasks: number }> {
    const args = await this.evalArgs(checkpoint, taskset, opts);
    const out = await new Promise<string>((res, rej) => {
      const c = spawn(process.execPath, [this.cli, 'eval', ...args], { cwd: this.workspace });
      let s = '';
      let e = '';
      c.stdout.on('data', (d) => (s += d));
      c.stderr.on('data', (d) => (e += d));
      c.on('error', rej);
      // The CLI's own message (`rft: FILE: field …`) is the reason; log lines before it stay in `e`.
      c.on('close', (code) => (code === 0 ? res(s) : rej(new InputError(`rft eval failed: ${evalFailure(e)}`))));
    });
    const r = JSON.parse(out.trim().split('\n').pop()!) as { accuracy: number; n: number };
    return { accuracy: r.accuracy, tasks: r.n };
  }

  /**
   * `rft eval` arguments. The run that owns the checkpoint (given, or found by its folder) supplies
   * what the caller left out: the held-out taskset (its eval split), the reward and the answer length.
   */
  async evalArgs(checkpoint: string, taskset: string, opts: EvaluateOptions = {}): Promise<string[]> {
    const ck = this.paths.inside(checkpoint, 'checkpoint');
    if (!existsSync(ck)) throw new NotFoundError(`checkpoint '${checkpoint}' not found`);
    // How the editor reads the picked file (its own mapping), for a file no config section names.
    const fmt =
      opts.format && taskset && !taskset.startsWith('builtin:') ? ['--format', JSON.stringify(opts.format)] : [];
    if (opts.config) {
      // A workspace config: its eval set (or the file, read with the config's `format:`) and reward.
      const cfgFile = this.paths.inside(opts.config, 'config');
      if (!existsSync(cfgFile)) throw new NotFoundError(`config '${opts.config}' not found`);
      if (taskset.startsWith('builtin:'))
        throw new InputError('a built-in taskset is evaluated without a workspace config', { field: 'taskset' });
      return [
        ck,
        '--config',
        cfgFile,
        ...(taskset ? ['--taskset', this.paths.inside(taskset, 'taskset'), ...fmt] : []),
      ];
    }
    const reg = await this.registry();
    const rec = opts.runId
      ? await reg.get(opts.runId)
      : (await reg.list()).find((r) => ck.startsWith(resolve(r.dir) + sep));
    if (opts.runId && !rec) throw new NotFoundError(`no run '${opts.runId}'`);
    const cfg = (rec?.config ?? {}) as RunConfigLike;
    const args = [ck];
    const runConfig =
      rec && !opts.reward && existsSync(join(rec.dir, 'config.yaml')) ? join(rec.dir, 'config.yaml') : undefined;
    if (runConfig && !taskset.startsWith('builtin:')) {
      // The run's own config: its eval set (a held-out share, a file with its `format:` mapping, a
      // built-in) or the picked file read as the run read its files, with the run's reward.
      args.push('--config', runConfig);
      if (taskset) args.push('--taskset', this.paths.inside(taskset, 'taskset'), ...fmt);
      return args;
    }
    if (taskset)
      args.push('--taskset', taskset.startsWith('builtin:') ? taskset : this.paths.inside(taskset, 'taskset'), ...fmt);
    else {
      const ev = cfg.eval ?? cfg.taskset;
      if (ev?.path) args.push('--taskset', resolve(this.workspace, ev.path));
      else if (ev?.builtin)
        args.push(
          '--taskset',
          `builtin:${ev.builtin}`,
          '--size',
          String(cfg.eval?.size ?? 200),
          '--seed',
          String(cfg.eval?.seed ?? 0),
        );
      else
        throw new InputError(
          `no held-out split to evaluate '${checkpoint}' on: it belongs to no run of this workspace. Pick a taskset file, or a workspace config (its eval set)`,
          { field: 'taskset' },
        );
    }
    const reward = opts.reward ?? cfg.workflow?.reward;
    if (reward) args.push('--reward', reward);
    const maxNew = cfg.explorer?.eval_sampling?.max_new_tokens;
    if (typeof maxNew === 'number') args.push('--max-new-tokens', String(maxNew));
    return args;
  }

  async metrics(runId: string, sinceStep = -1): Promise<MetricsPoint[]> {
    const rec = await (await this.registry()).get(runId);
    if (!rec) throw new NotFoundError(`no run '${runId}'`);
    return toPoints(runId, new MetricsLog(join(rec.dir, 'metrics.jsonl')).read()).filter((p) => p.step > sinceStep);
  }

  private readonly poller = new RunPoller(() => this.registry(), POLL_MS);

  onMetrics(cb: (m: MetricsPoint) => void): Disposable {
    return this.poller.subscribe({ metrics: cb });
  }

  onStatus(cb: (r: RunInfo) => void): Disposable {
    return this.poller.subscribe({ status: cb });
  }
}

export interface EvaluateOptions {
  /** The run whose config names the eval taskset / reward (default: the run that owns the checkpoint). */
  runId?: string;
  /** A workspace `*.rft.yaml`: its eval set, or the taskset file read with its `format:`, and its reward (wins over runId). */
  config?: string;
  /** The taskset file's own mapping when no config section names it (`rft eval --format`). */
  format?: Record<string, string>;
  reward?: string;
}

/** The parts of a stored run config that evaluation reads (the registry stores it untyped). */
interface RunConfigLike {
  taskset?: { builtin?: string; path?: string; seed?: number };
  eval?: { builtin?: string; path?: string; size?: number; seed?: number; holdout?: number };
  workflow?: { reward?: string };
  explorer?: { eval_sampling?: { max_new_tokens?: number } };
}

/**
 * Why `rft eval` failed: its `rft: …` line with the lines it heads (`invalid config, 1 problem(s):`
 * and the indented problems), else its last lines (a task error names FILE:LINE).
 */
export function evalFailure(stderr: string): string {
  const lines = stderr
    .trim()
    .split('\n')
    .filter((l) => l.trim());
  const at = lines.map((l) => l.startsWith('rft: ')).lastIndexOf(true);
  if (at < 0) return lines.slice(-3).join('\n') || 'no output';
  const end = lines.findIndex((l, i) => i > at && !/^\s/.test(l));
  return [lines[at]!.slice(5), ...lines.slice(at + 1, end < 0 ? undefined : end)].join('\n');
}
