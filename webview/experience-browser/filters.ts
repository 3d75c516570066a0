// The filter bar's raw values -> an ExperienceFilter, with a message per bad field (never a silent
// drop of what the user typed).
import type { ExperienceFilter } from '../../backend/core/protocol.js';

export interface FilterInputs {
  runId: string;
  taskId: string;
  source: string;
  status: string;
  minReward: string;
  maxReward: string;
  version: string;
  text: string;
  hideRejected: boolean;
}

export const EMPTY_INPUTS: FilterInputs = {
  runId: '',
  taskId: '',
  source: '',
  status: '',
  minReward: '',
  maxReward: '',
  version: '',
  text: '',
  hideRejected: false,
};

export function parseFilter(i: FilterInputs): { filter: ExperienceFilter; errors: Record<string, string> } {
  const filter: ExperienceFilter = {};
  const errors: Record<string, string> = {};
  const num = (field: keyof FilterInputs, raw: string): number | undefined => {
    if (raw.trim() === '') return undefined;
    const n = Number(raw);
    if (!Number.isFinite(n)) errors[field] = `'${raw}' is not a number`;
    return Number.isFinite(n) ? n : undefined;
  };
  if (i.runId.trim()) filter.runId = i.runId.trim();
  if (i.taskId.trim()) filter.taskId = i.taskId.trim();
  if (i.source === 'usual' || i.source === 'expert') filter.source = i.source;
  if (i.status === 'ok' || i.status === 'invalid' || i.status === 'infra_failure') filter.status = i.status;
  const lo = num('minReward', i.minReward);
  const hi = num('maxReward', i.maxReward);
  if (lo !== undefined) filter.minReward = lo;
  if (hi !== undefined) filter.maxReward = hi;
  if (lo !== undefined && hi !== undefined && lo > hi) errors.maxReward = 'max reward is below min reward';
  const v = i.version.trim();
  if (v) {
    const m = /^(\d+)?\s*(-|\.\.)?\s*(\d+)?$/.exec(v);
    if (!m || (!m[1] && !m[3])) errors.version = `'${v}' is not a version or range (e.g. 3, 2-5, 4-)`;
    else if (!m[2]) filter.minVersion = filter.maxVersion = Number(m[1]);
    else {
      if (m[1]) filter.minVersion = Number(m[1]);
      if (m[3]) filter.maxVersion = Number(m[3]);
    }
  }
  if (i.text.trim()) filter.text = i.text.trim();
  if (i.hideRejected) filter.rejected = false;
  return { filter, errors };
}

export function inputsOf(f: ExperienceFilter): FilterInputs {
  const version =
    f.minVersion !== undefined && f.minVersion === f.maxVersion
      ? String(f.minVersion)
      : f.minVersion !== undefined || f.maxVersion !== undefined
        ? `${f.minVersion ?? ''}-${f.maxVersion ?? ''}`
        : '';
  return {
    runId: f.runId ?? '',
    taskId: f.taskId ?? '',
    source: f.source ?? '',
    status: f.status ?? '',
    minReward: f.minReward?.toString() ?? '',
    maxReward: f.maxReward?.toString() ?? '',
    version,
    text: f.text ?? '',
    hideRejected: f.rejected === false,
  };
}
