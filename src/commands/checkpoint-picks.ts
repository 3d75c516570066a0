// Evaluate Checkpoint…: every run's checkpoints in one pick list, newest run and newest checkpoint
// first, each with its step and the eval accuracy the run recorded at that step. Pure (no vscode)
// so the order and wording are tested directly.
import type { MetricsPoint, RunInfo } from '../../backend/core/protocol.js';
import { shortRunId } from './run-picks.js';

export interface CheckpointItem {
  label: string;
  description?: string;
  detail?: string;
  /** A run's heading (vscode.QuickPickItemKind.Separator where shown). */
  separator?: true;
  runId?: string;
  runName?: string;
  path?: string;
  version?: number;
  step?: number;
}

/** eval_accuracy by step, from a run's metrics points. */
export function accuracyBySteps(points: MetricsPoint[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const p of points) if (p.values.eval_accuracy !== undefined) out.set(p.step, p.values.eval_accuracy);
  return out;
}

export function pct(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}

/**
 * Runs with checkpoints, newest run first (created / updated time), each headed by a separator and
 * its checkpoints newest first by version (v183 before v60 before v20: numeric, not by name).
 */
export function checkpointItems(
  runs: RunInfo[],
  accuracy: Map<string, Map<number, number>>,
  rel: (p: string) => string = (p) => p,
): CheckpointItem[] {
  const withCk = runs.filter((r) => r.checkpoints?.length);
  withCk.sort((a, b) => (b.createdAt ?? b.updatedAt ?? 0) - (a.createdAt ?? a.updatedAt ?? 0));
  const out: CheckpointItem[] = [];
  for (const r of withCk) {
    const name = r.name ?? r.id;
    // The short id tells apart runs of one name (run-picks.ts).
    out.push({ label: `${name} · ${r.status} · #${shortRunId(r.id)}`, separator: true });
    const acc = accuracy.get(r.id);
    for (const c of [...r.checkpoints!].sort((a, b) => b.version - a.version)) {
      const step = c.step ?? c.version;
      const a = acc?.get(step);
      out.push({
        label: `v${c.version}`,
        description: `step ${step} · ${a !== undefined ? `accuracy ${pct(a)}` : 'not evaluated'}`,
        detail: rel(c.path),
        runId: r.id,
        runName: name,
        path: c.path,
        version: c.version,
        step,
      });
    }
  }
  return out;
}

/** "v60 of tiny (step 60): accuracy 37.5% on 16 tasks of the held-out split" */
export function evalResultLine(
  ck: { version?: number; runName?: string; step?: number; path: string },
  r: { accuracy: number; tasks: number },
  on: string,
): string {
  const what =
    ck.version !== undefined
      ? `v${ck.version}${ck.runName ? ` of ${ck.runName}` : ''}${ck.step !== undefined ? ` (step ${ck.step})` : ''}`
      : ck.path;
  return `${what}: accuracy ${pct(r.accuracy)} on ${r.tasks} tasks of ${on}`;
}
