// The backend's programs, each an esbuild entry in dist/backend: the CLI and the worker threads it
// starts by file (backend/core/package-root.ts finds them there). build.mjs (packages external) and
// bench-bundle.mjs (packages bundled) both build these, so a new worker entry is added here once.
export const BACKEND_ENTRIES = {
  cli: 'backend/cli.ts',
  // Rollout workers are worker threads with their own entry module (backend/explorer/workers/pool.ts).
  'rollout-worker': 'backend/explorer/workers/rollout-worker.ts',
  // The thread a run's workflow.file code runs in (backend/explorer/user-code/host.ts).
  'user-code-worker': 'backend/explorer/user-code/worker.ts',
  // The thread `rft serve` parses run configs in (backend/server/config-check/thread.ts).
  'config-worker': 'backend/server/config-check/worker.ts',
};
