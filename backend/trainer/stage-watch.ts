// What the stage guards (collapse-guard.ts, stall-guard.ts) share: each reads a stage's train records
// into rows, replays a resumed stage's earlier records (so a warning already said is not said again),
// and says its warning at most once per stage. A guard supplies the row it keeps of a record and its check.
import type { RunWarning } from '../core/protocol.js';

export type Rec = Record<string, unknown>;

/** A finite number, or undefined (absent, NaN, a string). */
export const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The mean of the values that are there; undefined when none is. */
export function mean(xs: (number | undefined)[]): number | undefined {
  const ys = xs.filter((x): x is number => x !== undefined);
  return ys.length ? ys.reduce((a, b) => a + b, 0) / ys.length : undefined;
}

export abstract class StageWatch<Row extends { step: number }> {
  protected readonly rows: Row[] = [];
  private warned = false;

  /** `code`: the warning this guard says, found in a resumed stage's `history`. */
  constructor(stage: string, code: string, history: Rec[]) {
    for (const r of history) {
      if (r.stage !== stage) continue;
      if (r.kind === 'warning' && r.code === code) this.warned = true;
      if (r.kind === 'train') this.push(r);
    }
  }

  /** The row kept of a train record at `step`. */
  protected abstract row(r: Rec, step: number): Row;
  /** The warning the rows so far call for, if any. */
  protected abstract check(): RunWarning | undefined;

  private push(r: Rec): void {
    const step = num(r.step);
    if (step !== undefined) this.rows.push(this.row(r, step));
  }

  /** One train record of the stage; a warning the first time the check finds one. */
  observe(r: Rec): RunWarning | undefined {
    this.push(r);
    if (this.warned) return undefined;
    const w = this.check();
    if (w) this.warned = true;
    return w;
  }
}
