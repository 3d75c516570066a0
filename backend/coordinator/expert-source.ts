// Where a run's expert rows come from: the config's `experts` (a file or a built-in set), or rows
// already in a buffer the run shares (a database URL, buffer.train_from). A local run's own SQLite
// buffer starts empty, so a stage that samples expert rows (MIX's share, SFT) with no `experts`
// would wait for rows that never come: refused by the local run's check (config-check.ts
// checkLocalRunConfig: `rft run`, `--check`, the editor's Start), before the run starts.
import type { ConfigIssue, RunConfig } from '../core/config.js';

/** The refusal of a stage sampling `pct`% expert rows where there are none (one fix that works). */
export const NO_EXPERTS = (pct: number): string =>
  `samples ${pct}% expert rows and the run has none. Fix: add experts: {path: FILE} (lines of {"prompt", "response"}).`;

/** The issue of a stage (its algorithm's path, its expert share) that samples expert rows a new run's buffer cannot hold, or undefined. */
export function expertSourceIssue(cfg: RunConfig, at: string, ratio: number): ConfigIssue | undefined {
  if (!(ratio > 0) || cfg.experts) return undefined;
  // Rows copied from another run's buffer may hold expert rows already (promoted there).
  if (cfg.buffer.train_from) return undefined;
  return { path: `${at}.name`, message: NO_EXPERTS(Math.round(ratio * 100)) };
}
