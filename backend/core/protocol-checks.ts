// The protocol's shapes for the editor's checks (backend/core/protocol.ts maps the methods to them):
// a taskset file's report and how a run config reads it, and a run config's issues at their lines.
import type { Domain } from './types.js';

export interface TasksetIssue {
  file: string;
  /** 1-based line of the bad record (JSONL / CSV line; JSON / YAML: line where the record starts). */
  line?: number;
  field?: string;
  message: string;
  severity: 'error' | 'warning';
}

export interface TasksetReport {
  file: string;
  tasks: number;
  issues: TasksetIssue[];
}

/** How a run config reads a taskset file: `format:` (prompt_key, response_key, ...), role and domain. */
export interface TasksetReading {
  format?: Record<string, string>;
  role?: 'task' | 'expert';
  domain?: Domain;
}

/** A config file's problems, each at the line of its key where it can be found. */
export interface ConfigIssueAt {
  line?: number;
  field: string;
  message: string;
  /** A problem that does not stop a run (a renamed key's old spelling); unset: an error. */
  severity?: 'warning';
}
