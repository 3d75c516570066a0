// The OpenBLAS settings the native addon loads with. OpenBLAS reads its environment once, when the
// addon's dlopen initialises it; the engine sets these for that moment only and puts the process
// environment back, so child processes (a PyTorch baseline, a user's tool) see the user's own.

export interface InstallProbe {
  /** The family the install's probe chose over OpenBLAS's own (build-native.mjs), with its reason. */
  coretype?: string;
  core_note?: string;
  /** GFLOP/s of one single-threaded 256^3 sgemm per kernel family, as the probe measured them. */
  core_gflops?: Record<string, number>;
}

export interface OpenblasLoadEnv {
  /** Variables to set while the addon loads (unset ones are left to OpenBLAS's defaults). */
  set: Record<string, string>;
  /** Appended to the engine's log line: which family was forced, by whom, and what it costs. */
  note: string;
}

/**
 * How long an idle OpenBLAS worker spins (sched_yield) before it sleeps: 2^16 cycles, about 20 us,
 * instead of OpenBLAS's 2^28 (~0.1 s). Between two products of a training step the engine runs its
 * own threads (native-ops, attention) and tfjs's; a worker spinning for 0.1 s takes a core from
 * them. Measured on 2 cores (AMD EPYC, docs/performance.md): the 3M training step 3-10% faster.
 */
export const THREAD_TIMEOUT_LOG2 = '16';

/**
 * Order: RFT_BLAS_CORETYPE (this project's own choice) > OPENBLAS_CORETYPE (the environment's, which
 * may be set machine-wide for other programs) > the install's probe > OpenBLAS's own detection. An
 * environment family the probe measured 1.3x slower than the best one is kept, and named in the note
 * with the faster family and how to take it.
 */
export function openblasLoadEnv(env: NodeJS.ProcessEnv, probe: InstallProbe | undefined): OpenblasLoadEnv {
  const set: Record<string, string> = {};
  if (env.OPENBLAS_THREAD_TIMEOUT === undefined) set.OPENBLAS_THREAD_TIMEOUT = THREAD_TIMEOUT_LOG2;
  const own = env.RFT_BLAS_CORETYPE?.trim();
  if (own) {
    set.OPENBLAS_CORETYPE = own;
    return { set, note: ` (OPENBLAS_CORETYPE=${own} from RFT_BLAS_CORETYPE)` };
  }
  const inherited = env.OPENBLAS_CORETYPE;
  if (inherited !== undefined) {
    const slower = slowerThanBest(inherited, probe?.core_gflops);
    const hint = slower
      ? `; the install measured ${slower.best} ${slower.ratio.toFixed(1)}x faster on this CPU: RFT_BLAS_CORETYPE=${slower.best} uses it for RFT Studio only`
      : '';
    return { set, note: ` (OPENBLAS_CORETYPE=${inherited} from the environment${hint})` };
  }
  if (probe?.coretype) {
    set.OPENBLAS_CORETYPE = probe.coretype;
    return { set, note: ` (OPENBLAS_CORETYPE=${probe.coretype} from the install's probe: ${probe.core_note ?? ''})` };
  }
  return { set, note: '' };
}

function slowerThanBest(
  family: string,
  gflops: Record<string, number> | undefined,
): { best: string; ratio: number } | undefined {
  if (!gflops) return undefined;
  const mine = Object.entries(gflops).find(([k]) => k.toLowerCase() === family.toLowerCase())?.[1];
  const [best, top] = Object.entries(gflops).reduce((a, b) => (b[1] > a[1] ? b : a), ['', 0]);
  if (!mine || !best || best.toLowerCase() === family.toLowerCase() || top < 1.3 * mine) return undefined;
  return { best, ratio: top / mine };
}

/** Run `load` with `set` in the process environment, then put back what was there. */
export function withEnv<T>(set: Record<string, string>, load: () => T): T {
  const before = Object.fromEntries(Object.keys(set).map((k) => [k, process.env[k]]));
  Object.assign(process.env, set);
  try {
    return load();
  } finally {
    for (const [k, v] of Object.entries(before)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}
