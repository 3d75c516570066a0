// The run registry of a workspace: `<workspace>/.rft/runs.json` (lowdb; writes are atomic through
// steno's temp file + rename). Runs, their configs, status, checkpoints and last step.
// Every change re-reads the file first, so two processes (CLI and extension backend) rarely clobber
// each other; changes within one process are serialised.
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';

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
  /** Default: `<slug of name>-<yyyymmdd-hhmmss>`, made unique. */
  id?: string;
  /** Default: `<run dir>/buffer.db`; a postgres:// URL is kept as given. */
  dbPath?: string;
}

export class RunNotFoundError extends Error {
  constructor(id: string, file: string) {
    super(`${file}: no run '${id}'`);
    this.name = 'RunNotFoundError';
  }
}

const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'run';
const stamp = (t: number) => new Date(t).toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);

export class RunRegistry {
  private chain: Promise<unknown> = Promise.resolve();

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
    const reg = new RunRegistry(ws, file, new Low<RunsFile>(new JSONFile<RunsFile>(file), { version: 1, runs: [] }), opts.now ?? Date.now);
    await reg.reload();
    return reg;
  }

  private async reload(): Promise<void> {
    try {
      await this.db.read();
    } catch (e) {
      // A corrupt file is never overwritten: the user fixes or moves it.
      throw new Error(`${this.file}: cannot read the run registry: ${(e as Error).message}`);
    }
    const d = this.db.data as Partial<RunsFile> | null;
    if (!d || !Array.isArray(d.runs)) throw new Error(`${this.file}: field 'runs': expected an array of runs`);
  }

  /** Serialised read-modify-write. */
  private change<T>(fn: (data: RunsFile) => T): Promise<T> {
    const next = this.chain.then(async () => {
      await this.reload();
      const out = fn(this.db.data);
      await this.db.write();
      return out;
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  private find(data: RunsFile, id: string): RunRecord {
    const r = data.runs.find((x) => x.id === id);
    if (!r) throw new RunNotFoundError(id, this.file);
    return r;
  }

  async list(): Promise<RunRecord[]> {
    await this.chain;
    await this.reload();
    return structuredClone(this.db.data.runs).sort((a, b) => b.createdAt - a.createdAt);
  }

  async get(id: string): Promise<RunRecord | undefined> {
    await this.chain;
    await this.reload();
    const r = this.db.data.runs.find((x) => x.id === id);
    return r && structuredClone(r);
  }

  create(n: NewRun): Promise<RunRecord> {
    return this.change((data) => {
      const t = this.now();
      let id = n.id ?? `${slug(n.name)}-${stamp(t)}`;
      if (n.id !== undefined && data.runs.some((r) => r.id === id)) throw new Error(`${this.file}: a run '${id}' already exists`);
      for (let k = 2; data.runs.some((r) => r.id === id); k++) id = `${slug(n.name)}-${stamp(t)}-${k}`;
      if (!/^[A-Za-z0-9._-]+$/.test(id)) throw new Error(`run id '${id}': use letters, digits, '.', '_' and '-' only`);
      const dir = join(this.workspace, '.rft', 'runs', id);
      const run: RunRecord = {
        id,
        name: n.name,
        configPath: n.configPath ?? null,
        config: structuredClone(n.config),
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

  setStatus(id: string, status: RunStatus, reason?: string): Promise<RunRecord> {
    if (!RUN_STATUSES.includes(status)) return Promise.reject(new Error(`run status must be one of ${RUN_STATUSES.join(', ')}, got '${status}'`));
    return this.change((data) => {
      const r = this.find(data, id);
      r.status = status;
      if (reason === undefined) delete r.statusReason;
      else r.statusReason = reason;
      r.updatedAt = this.now();
      return structuredClone(r);
    });
  }

  /** Record a checkpoint; one per version (a re-saved version replaces the old entry). Advances lastStep. */
  addCheckpoint(id: string, c: { version: number; path: string; step: number }): Promise<RunRecord> {
    return this.change((data) => {
      const r = this.find(data, id);
      r.checkpoints = r.checkpoints.filter((x) => x.version !== c.version);
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
      data.runs = data.runs.filter((r) => r.id !== id);
    });
  }
}
