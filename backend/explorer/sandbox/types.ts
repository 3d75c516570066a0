// Types of the code sandbox: options, jobs and what a job returns.

export interface SandboxOptions {
  /** The Node binary that runs the workers (>= 20, with the permission model). */
  nodePath: string;
  /** Worker processes kept warm and reused. */
  workers: number;
  /** Time budget of one job (loading the code plus all its calls), enforced inside the worker. */
  timeoutMs: number;
  /** Extra wall-clock time the host waits before it SIGKILLs the worker (covers anything the vm timeout misses). */
  killGraceMs: number;
  /** V8 old-space limit of a worker (--max-old-space-size). */
  memoryMb: number;
  /** Address-space-ish limit of a worker process (RLIMIT_DATA): catches off-heap bombs (ArrayBuffers). */
  dataLimitMb: number;
  /** Max size of captured console output and of one encoded return value (characters). */
  maxOutputBytes: number;
  /** A worker is replaced after this many jobs (bounds leaks and the RLIMIT_CPU backstop). */
  maxJobsPerWorker: number;
  /** A worker that is not ready within this time is a sandbox (infra) failure. */
  startupTimeoutMs: number;
  /** A worker that does not acknowledge a job within this time is broken (the job is retried once). */
  ackTimeoutMs: number;
  /** Jobs waiting for a worker beyond this are refused as infra failures (pool overloaded). */
  maxQueue: number;
}

export const DEFAULT_SANDBOX_OPTIONS: SandboxOptions = {
  nodePath: process.execPath,
  workers: 2,
  timeoutMs: 2000,
  killGraceMs: 1500,
  memoryMb: 64,
  dataLimitMb: 768,
  maxOutputBytes: 64 * 1024,
  maxJobsPerWorker: 500,
  startupTimeoutMs: 15_000,
  ackTimeoutMs: 5_000,
  maxQueue: 10_000,
};

/** Run `code`; with `entryPoint` and `args`, then call entryPoint(...args[i]) for every i. */
export interface SandboxJob {
  code: string;
  entryPoint?: string;
  args?: unknown[][];
  /** Overrides the pool's per-job time budget. */
  timeoutMs?: number;
}

/**
 * How a job ended, all from the user's code (status ok, a normal low reward):
 * ok; syntax_error; load_error (top level threw); timeout (vm timeout or host SIGKILL);
 * memory (V8 heap limit hit, worker died); output_limit; crash (worker died otherwise while running it).
 */
export type RunKind = 'ok' | 'syntax_error' | 'load_error' | 'timeout' | 'memory' | 'output_limit' | 'crash';

export type CallResult =
  | { ok: true; value: unknown }
  | { ok: false; kind: 'threw' | 'timeout' | 'output_limit' | 'missing' | 'pending'; error: string };

export interface SandboxRun {
  status: 'ok';
  kind: RunKind;
  /** Per call (tests mode); empty when the code never got that far. */
  calls: CallResult[];
  /** Script mode: the encoded completion value of the code. */
  value: CallResult | null;
  error: string;
  logs: string;
  logsTruncated: boolean;
  ms: number;
}

/** The sandbox itself failed (could not start a worker, protocol broken, pool closed, aborted). */
export interface SandboxInfraFailure {
  status: 'infra_failure';
  reason: string;
  ms: number;
}

export type SandboxResult = SandboxRun | SandboxInfraFailure;

/** Which isolation layers are active for the workers (recorded, shown in the bench and logs). */
export interface IsolationLayers {
  separateProcess: true;
  permissionFlag: string | null;
  network: 'unshare -n' | 'unshare -rn' | 'none';
  /** Which processes escaped code could see and signal: its own PID namespace, or the host's. */
  pids: string;
  user: string;
  rlimits: string | null;
  heapLimitMb: number;
  /** Socket files (net.connect to a path) refused before any program runs (socket-guard.ts). */
  unixSockets: 'blocked (socket-guard)' | 'not blocked';
  vmContext: 'fresh per job, no require/process/timers, codegen from strings and wasm off';
}
