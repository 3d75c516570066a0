// A worker's state in the log without flooding it: each kind of state (its text with the numbers
// taken out: "no job for v#") gets a line the first time and then at most once every 30 s. Only the
// last kind used to be remembered, so a loop that alternates (syncing v3, waiting for a job for v3,
// syncing v4, ...) wrote two lines per trainer step (~2.4 lines/s on a small model) although the
// docs promise one line per kind every 30 s.
import type { LogLevel } from '../../core/log.js';

export const STATE_LINE_EVERY_MS = 30_000;

export class StateLog {
  private readonly last = new Map<string, number>();

  constructor(
    private readonly write: (level: LogLevel, line: string) => void,
    private readonly now: () => number = Date.now,
    private readonly everyMs = STATE_LINE_EVERY_MS,
  ) {}

  /** Logs `state: detail` unless a line of the same kind went out within everyMs; says whether it did. */
  say(state: string, detail = '', level: LogLevel = 'info'): boolean {
    const key = `${level}:${state}:${detail.replace(/\d+/g, '#')}`;
    const t = this.now();
    const at = this.last.get(key);
    if (at !== undefined && t - at < this.everyMs) return false;
    this.last.set(key, t);
    this.write(level, `${state}${detail ? ': ' + detail : ''}`);
    return true;
  }
}
