// The run registry of a workspace: `<workspace>/.rft/runs.json` (lowdb; writes are atomic through
// steno's temp file + rename). Runs, their configs, status, checkpoints and last step.
// Every change re-reads the file and writes it under an exclusive lock (`runs.json.lock`, an OS
// lock: file-lock.ts), so the coordinator, the trainer process, `rft serve` and the CLI writing at
// once lose no record. A structurally bad record is reported by index and field and kept in the
// file as it is; the valid ones around it are served.
import { ConflictError, InfrastructureError, InputError } from '../core/errors.js';
import { mkdir } from 'node:fs/promises';
import { closeSync, constants, openSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';
import { withFileLock } from './file-lock.js';
import { logger } from '../core/log.js';
import { checkPidFile, pidFileText } from '../core/pid-file.js';
import { checkRunId } from '../core/run-id.js';

const log = logger('runs');

export const RUN_STATUSES = ['created', 'running', 'paused', 'stopped', 'completed', 'failed'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export interface RunCheckpoint {
  version: number;
  path: string;
  step: number;
  createdAt: number;
}

export interface RunRecord {
  id: string;
  name: string;
  /** The config file the run was started from (null: built in code / from the UI). */
  configPath: string | null;
  /** The validated config as it was at start (the file may change later). */
  config: unknown;
  status: RunStatus;
  statusReason?: string;
  /**
   * What a failed run failed on (core/errors.ts kinds): 'input' is a refusal of its config or data,
   * which the same config meets again on resume (coordinator/resume-state.ts).
   */
  failure?: string;
  /** sha256 of the config file's text when the run started or last took it (a changed file asks before a resume uses it). */
  configDigest?: string;
  createdAt: number;
  updatedAt: number;
  /** The run folder (`.rft/runs/<id>`) and its SQLite buffer. */
  dir: string;
  dbPath: string;
  checkpoints: RunCheckpoint[];
  lastStep: number;
}

interface RunsFile {
  version: 1;
  runs: RunRecord[];
}

export interface NewRun {
  name: string;
  config: unknown;
  configPath?: string | null;
  configDigest?: string;
  /** Default: `<slug of name>-<yyyymmdd-hhmmss>`, made unique. */
  id?: string;
  /** Default: `<run dir>/buffer.db`; a postgres:// URL is kept as given. */
  dbPath?: string;
}

export class RunNotFoundError extends InputError {
  constructor(id: string, file: string) {
    super(`${file}: no run '${id}'`);
    this.name = 'RunNotFoundError';
  }
}

const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40) || 'run';
const stamp = (t: number) => new Date(t).toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);

/** The first structural problem of a record (`runs[3].status: ...`), or null when it is usable. */
export function recordProblem(r: unknown, i: number): string | null {
  const at = (f: string, want: string, got: unknown) =>
    `runs[${i}].${f}: expected ${want}, got ${JSON.stringify(got) ?? 'nothing'}`;
  if (!r || typeof r !== 'object' || Array.isArray(r))
    return `runs[${i}]: expected a run object, got ${JSON.stringify(r)}`;
  const x = r as Record<string, unknown>;
  for (const f of ['id', 'name', 'dir', 'dbPath'] as const)
    if (typeof x[f] !== 'string' || !x[f]) return at(f, 'a non-empty string', x[f]);
  if (!RUN_STATUSES.includes(x.status as RunStatus)) return at('status', `one of ${RUN_STATUSES.join(', ')}`, x.status);
  for (const f of ['createdAt', 'updatedAt', 'lastStep'] as const)
    if (typeof x[f] !== 'number' || !Number.isFinite(x[f])) return at(f, 'a number', x[f]);
  if (x.configPath !== null && x.configPath !== undefined && typeof x.configPath !== 'string')
    return at('configPath', 'a string or null', x.configPath);
  if (!Array.isArray(x.checkpoints)) return at('checkpoints', 'an array', x.checkpoints);
  for (const [k, c] of x.checkpoints.entries()) {
    const cc = c as Record<string, unknown> | null;
    if (!cc || typeof cc !== 'object') return at(`checkpoints[${k}]`, 'a checkpoint object', c);
    if (typeof cc.path !== 'string') return at(`checkpoints[${k}].path`, 'a string', cc.path);
    for (const f of ['version', 'step'] as const)
      if (typeof cc[f] !== 'number' || !Number.isFinite(cc[f])) return at(`checkpoints[${k}].${f}`, 'a number', cc[f]);
  }
  return null;
}

const usable = (r: unknown): r is RunRecord => recordProblem(r, 0) === null;

export class RunRegistry {
  private chain: Promise<unknown> = Promise.resolve();
  private reported = new Set<string>();
  /** Structural problems of the records read last (by index and field); those records are skipped. */
  problems: string[] = [];

  private constructor(
    readonly workspace: string,
    readonly file: string,
    private readonly db: Low<RunsFile>,
    private readonly now: () => number,
  ) {}

  /** Opens (creating `.rft/` if needed) the registry of a workspace folder. */
  static async open(workspace: string, opts: { now?: () => number } = {}): Promise<RunRegistry> {
    const ws = resolve(workspace);
    await mkdir(join(ws, '.rft'), { recursive: true });
    const file = join(ws, '.rft', 'runs.json');
    const reg = new RunRegistry(
      ws,
      file,
      new Low<RunsFile>(new JSONFile<RunsFile>(file), { version: 1, runs: [] }),
      opts.now ?? Date.now,
    );
    await reg.reload();
    return reg;
  }

  private async reload(): Promise<void> {
    try {
      await this.db.read();
    } catch (e) {
      // A corrupt file is never overwritten: the user fixes or moves it.
      throw new InfrastructureError(`${this.file}: cannot read the run registry: ${(e as Error).message}`);
    }
    const d = this.db.data as Partial<RunsFile> | null;
    if (!d || typeof d !== 'object' || !Array.isArray(d.runs))
      throw new InputError(`${this.file}: field 'runs': expected an array of runs`);
    this.problems = d.runs.flatMap((r, i) => recordProblem(r, i) ?? []);
    for (const p of this.problems) {
      if (this.reported.has(p)) continue;
      this.reported.add(p);
      log.warn(`${this.file}: ${p} (record skipped, left in the file as it is)`);
    }
  }

  /** Serialised read-modify-write, under the registry's lock across processes. */
  private change<T>(fn: (data: RunsFile) => T): Promise<T> {
    const next = this.chain.then(() =>
      withFileLock(`${this.file}.lock`, async () => {
        await this.reload();
        const out = fn(this.db.data);
        await this.db.write();
        return out;
      }),
    );
    this.chain = next.catch(() => undefined);
    return next;
  }

  private find(data: RunsFile, id: string): RunRecord {
    const r = data.runs.find((x) => usable(x) && x.id === id);
    if (!r) throw new RunNotFoundError(id, this.file);
    return r;
  }

  async list(): Promise<RunRecord[]> {
    await this.chain;
    await this.reload();
    return structuredClone(this.db.data.runs.filter(usable)).sort((a, b) => b.createdAt - a.createdAt);
  }

  async get(id: string): Promise<RunRecord | undefined> {
    await this.chain;
    await this.reload();
    const r = this.db.data.runs.find((x) => usable(x) && x.id === id);
    return r && structuredClone(r);
  }

  create(n: NewRun): Promise<RunRecord> {
    return this.change((data) => {
      const t = this.now();
      let id = n.id ?? `${slug(n.name)}-${stamp(t)}`;
      const taken = (x: string) => data.runs.some((r) => (r as Partial<RunRecord> | null)?.id === x);
      if (n.id !== undefined && taken(id)) throw new ConflictError(`${this.file}: a run '${id}' already exists`);
      for (let k = 2; taken(id); k++) id = `${slug(n.name)}-${stamp(t)}-${k}`;
      checkRunId(id);
      const dir = join(this.workspace, '.rft', 'runs', id);
      const run: RunRecord = {
        id,
        name: n.name,
        configPath: n.configPath ?? null,
        config: structuredClone(n.config),
        ...(n.configDigest ? { configDigest: n.configDigest } : {}),
        status: 'created',
        createdAt: t,
        updatedAt: t,
        dir,
        dbPath: n.dbPath ?? join(dir, 'buffer.db'),
        checkpoints: [],
        lastStep: 0,
      };
      data.runs.push(run);
      return structuredClone(run);
    });
  }

  /** `failure`: what a failed run failed on (an error kind); any other status clears it. */
  setStatus(id: string, status: RunStatus, reason?: string, failure?: string): Promise<RunRecord> {
    if (!RUN_STATUSES.includes(status))
      return Promise.reject(new Error(`run status must be one of ${RUN_STATUSES.join(', ')}, got '${status}'`));
    return this.change((data) => {
      const r = this.find(data, id);
      r.status = status;
      if (reason === undefined) delete r.statusReason;
      else r.statusReason = reason;
      if (status === 'failed' && failure !== undefined) r.failure = failure;
      else delete r.failure;
      r.updatedAt = this.now();
      return structuredClone(r);
    });
  }

  /** A resume that takes the config file as it is now: the run's config and the file's digest replaced. */
  setConfig(id: string, config: unknown, configDigest: string): Promise<RunRecord> {
    return this.change((data) => {
      const r = this.find(data, id);
      r.config = structuredClone(config);
      r.configDigest = configDigest;
      r.updatedAt = this.now();
      return structuredClone(r);
    });
  }

  /**
   * Record a checkpoint; one per version (a re-saved version replaces the old entry). Advances lastStep.
   * `drop`: versions whose folders were deleted (pruned) in the same breath, so the list names only
   * folders that exist, in one write.
   */
  addCheckpoint(
    id: string,
    c: { version: number; path: string; step: number },
    drop: readonly number[] = [],
  ): Promise<RunRecord> {
    return this.change((data) => {
      const r = this.find(data, id);
      r.checkpoints = r.checkpoints.filter((x) => x.version !== c.version && !drop.includes(x.version));
      r.checkpoints.push({ ...c, createdAt: this.now() });
      r.checkpoints.sort((a, b) => a.version - b.version);
      r.lastStep = Math.max(r.lastStep, c.step);
      r.updatedAt = this.now();
      return structuredClone(r);
    });
  }

  setLastStep(id: string, step: number): Promise<RunRecord> {
    return this.change((data) => {
      const r = this.find(data, id);
      r.lastStep = step;
      r.updatedAt = this.now();
      return structuredClone(r);
    });
  }

  /** Latest checkpoint (highest version), for resume. */
  async latestCheckpoint(id: string): Promise<RunCheckpoint | undefined> {
    const r = await this.get(id);
    if (!r) throw new RunNotFoundError(id, this.file);
    return r.checkpoints[r.checkpoints.length - 1];
  }

  remove(id: string): Promise<void> {
    return this.change((data) => {
      this.find(data, id);
      data.runs = data.runs.filter((r) => !usable(r) || r.id !== id);
    });
  }
}

/**
 * The pid in a run folder's `run.pid` when that process may be the run's (and is not this one), else
 * null. A pid that now belongs to another process (checked by its start time) is not the run's; a
 * live pid that cannot be checked (a bare-pid file of an older version) counts, so a run that may be
 * live is never resumed twice.
 */
export function livePid(dir: string, runId?: string): number | null {
  const file = join(dir, 'run.pid');
  const c = checkPidFile(file, runId);
  return c.state !== 'gone' && c.pid !== process.pid ? c.pid : null;
}

export class RunLiveError extends ConflictError {
  override name = 'RunLiveError';
  constructor(
    readonly runId: string,
    readonly pid: number,
    dir: string,
  ) {
    super(
      `run '${runId}' is still running as pid ${pid} (${join(dir, 'run.pid')}): stop it first (rft stop ${runId}); if pid ${pid} is not this run, delete that file`,
    );
  }
}

/** Refuses (RunLiveError) when another live process holds the run folder. */
export function assertNotLive(dir: string, runId: string): void {
  const pid = livePid(dir, runId);
  if (pid !== null) throw new RunLiveError(runId, pid, dir);
}

/**
 * Makes this process the run's process: writes `run.pid` exclusively (O_EXCL), so two resumes that
 * race cannot both take it; a file left by a dead process (or whose pid is now another process) is
 * replaced. The file records the run id and this process's start time (core/pid-file.ts). Returns the pid file.
 */
export function claimRunPid(dir: string, runId: string): string {
  const file = join(dir, 'run.pid');
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
      try {
        writeSync(fd, pidFileText(runId));
      } finally {
        closeSync(fd);
      }
      return file;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw e;
      assertNotLive(dir, runId);
      unlinkSync(file); // left by a process that is gone (or by this one)
    }
  }
}
