// Builds the command line of a sandbox worker and records which isolation layers are active.
// Layers: a separate process; Node's permission model (no fs read or write, no child processes,
// no worker threads, no addons); an empty network namespace (`unshare -n`, as the permission model
// of Node 20 does not cover the network); rlimits (RLIMIT_DATA for off-heap memory, RLIMIT_CPU as a
// backstop); when the host runs as root, an unprivileged user (`setpriv` to nobody, no new
// privileges), so code that escaped everything else still cannot signal or ptrace the host; the
// V8 heap limit; socket-guard.ts (socket files refused: neither the network namespace nor the
// permission model covers them); and inside, a fresh vm context without require/process/timers.
// Not root: no drop of identity is possible (setuid needs CAP_SETUID, and a user namespace's "root"
// is still the host user for every file and process outside it), so the worker keeps the host's
// user; the permission model, the socket guard and the network namespace are what stop it then.
import { spawnSync } from 'node:child_process';
import type { IsolationLayers, SandboxOptions } from './types.js';
import { WORKER_SOURCE } from './worker-source.js';
import { SOCKET_GUARD_URL } from './socket-guard.js';

interface Probe {
  unshare: string[] | null;
  /** unshare also gives a PID namespace. */
  pidNamespace: boolean;
  setpriv: string[] | null;
  prlimit: boolean;
  permissionFlag: string | null;
}

let probed: Probe | null = null;

function works(cmd: string, args: string[]): boolean {
  try {
    const r = spawnSync(cmd, args, { stdio: 'ignore', timeout: 5000, env: {} });
    return r.status === 0;
  } catch {
    return false;
  }
}

/** Probed once per process: which wrappers exist and work here. */
export function probeIsolation(): Probe {
  if (probed) return probed;
  const flags = process.allowedNodeEnvironmentFlags;
  const permissionFlag = flags.has('--permission')
    ? '--permission'
    : flags.has('--experimental-permission')
      ? '--experimental-permission'
      : null;
  let unshare: string[] | null = null;
  let pidNamespace = false;
  if (process.platform === 'linux') {
    // As root plain namespaces; otherwise inside an unprivileged user namespace, where allowed. A PID
    // namespace first (-p -f: the worker is pid 1 of it), else the network namespace alone.
    const pid = ['-p', '-f', '--kill-child', '--mount-proc'];
    for (const base of [['-n'], ['-r', '-n']]) {
      if (works('unshare', [...base, ...pid, 'true'])) {
        unshare = ['unshare', ...base, ...pid];
        pidNamespace = true;
        break;
      }
    }
    if (!unshare) {
      if (works('unshare', ['-n', 'true'])) unshare = ['unshare', '-n'];
      else if (works('unshare', ['-r', '-n', 'true'])) unshare = ['unshare', '-r', '-n'];
    }
  }
  const prlimit = process.platform === 'linux' && works('prlimit', ['--version']);
  let setpriv: string[] | null = null;
  if (process.platform === 'linux' && process.getuid?.() === 0) {
    const args = ['--reuid=65534', '--regid=65534', '--clear-groups', '--no-new-privs', '--'];
    if (works('setpriv', [...args, process.execPath, '-e', '0'])) setpriv = ['setpriv', ...args];
  }
  probed = { unshare, pidNamespace, setpriv, prlimit, permissionFlag };
  return probed;
}

export function isolationLayers(opts: SandboxOptions): IsolationLayers {
  const p = probeIsolation();
  return {
    separateProcess: true,
    permissionFlag: p.permissionFlag,
    network: p.unshare ? (p.unshare.includes('-r') ? 'unshare -rn' : 'unshare -n') : 'none',
    pids: p.pidNamespace
      ? 'own namespace (unshare -p)'
      : process.platform === 'linux'
        ? 'host (unshare -p is not available here)'
        : `host (no PID namespaces on ${process.platform})`,
    user: p.setpriv ? 'nobody (setpriv, no new privileges)' : 'same as host',
    rlimits: p.prlimit ? `RLIMIT_DATA=${opts.dataLimitMb}MiB RLIMIT_CPU=${cpuLimitS(opts)}s` : null,
    heapLimitMb: opts.memoryMb,
    unixSockets: p.permissionFlag ? 'blocked (socket-guard)' : 'not blocked',
    vmContext: 'fresh per job, no require/process/timers, codegen from strings and wasm off',
  };
}

function cpuLimitS(opts: SandboxOptions): number {
  // Never reached while the host timers work: every job is killed at timeout + grace.
  return Math.ceil((opts.maxJobsPerWorker * (opts.timeoutMs + opts.killGraceMs)) / 1000) + 30;
}

/** The command and arguments that start one worker (`source`: the program; tests swap it to probe the outer layers). */
export function workerCommand(opts: SandboxOptions, source: string = WORKER_SOURCE): { cmd: string; args: string[] } {
  const p = probeIsolation();
  const node = [
    opts.nodePath,
    ...(p.permissionFlag ? [p.permissionFlag] : []),
    // Loaded before the program: socket files refused (the guard relies on the permission model denying process.binding).
    ...(p.permissionFlag ? ['--import', SOCKET_GUARD_URL] : []),
    '--no-warnings',
    `--max-old-space-size=${opts.memoryMb}`,
    '--unhandled-rejections=none',
    '-e',
    source,
  ];
  const limits = p.prlimit
    ? ['prlimit', `--data=${opts.dataLimitMb * 1024 * 1024}`, `--cpu=${cpuLimitS(opts)}`, '--core=0']
    : [];
  const full = [...(p.unshare ?? []), ...limits, ...(p.setpriv ?? []), ...node];
  return { cmd: full[0]!, args: full.slice(1) };
}
