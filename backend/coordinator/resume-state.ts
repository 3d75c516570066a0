// Whether resuming a run can succeed, and with which config: read by `rft resume`, by the server
// (RunInfo.resumable / configChanged, so the editor offers Resume only where it can work) and by
// nothing that loads a model. A run refused on its config or data (an InputError, also from its
// trainer or explorer process: processes.ts EXIT_REFUSED) meets the same refusal again with the same
// config; a config file edited since the run took it is a choice the user makes (the new file, or
// the config the run started with), never taken silently.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RunRecord } from '../buffer/runs.js';

/** sha256 of a config file's text (what the run registry keeps as configDigest). */
export function fileDigest(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

export interface ResumeState {
  resumable: boolean;
  /** Why not, with the one fix. */
  why?: string;
  /** The config file, when its text changed since the run took it. */
  configChanged?: string;
}

/** The config file of a run when it changed since the run took it (undefined: unchanged, gone, or not recorded). */
export function changedConfig(r: Pick<RunRecord, 'configPath' | 'configDigest'>): string | undefined {
  if (!r.configPath || !r.configDigest) return undefined;
  try {
    return fileDigest(r.configPath) === r.configDigest ? undefined : r.configPath;
  } catch {
    return undefined; // moved or unreadable: there is no new config to offer
  }
}

export function resumeState(r: Pick<RunRecord, 'configPath' | 'configDigest' | 'failure'>): ResumeState {
  const configChanged = changedConfig(r);
  if (r.failure === 'input' && !configChanged)
    return {
      resumable: false,
      why: `it was refused on its config or data, and a resume with the same config is refused again. Fix: edit ${r.configPath ?? 'its config'}, then resume with the new config.`,
    };
  return { resumable: true, ...(configChanged ? { configChanged } : {}) };
}
