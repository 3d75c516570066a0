// The run a command acts on: the one its argument names (a run id from the palette or a link, a
// RunInfo from the Runs view), else one the user picks among the runs it can act on, told apart as
// run-picks.ts tells them apart.
import * as vscode from 'vscode';
import type { RunInfo } from '../../backend/core/protocol.js';
import { runPickItems } from './run-picks.js';

/** The run id a command's argument names: the id itself, or a RunInfo's. */
export function runIdArg(arg: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  if (arg && typeof arg === 'object' && 'id' in arg) return String((arg as RunInfo).id);
  return undefined;
}

/**
 * The run ARG names (looked up among ALL runs), else one picked from CANDIDATES; `none` is said when
 * there is nothing to pick. Undefined: no such run, nothing to pick, or the pick was dismissed.
 */
export async function runFromArg(
  all: readonly RunInfo[],
  arg: unknown,
  candidates: readonly RunInfo[],
  o: { title: string; none: () => void },
): Promise<RunInfo | undefined> {
  const id = runIdArg(arg);
  if (id !== undefined) return all.find((r) => r.id === id);
  if (!candidates.length) {
    o.none();
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(runPickItems(candidates), {
    title: o.title,
    matchOnDescription: true,
    matchOnDetail: true,
    ignoreFocusOut: true,
  });
  return candidates.find((r) => r.id === pick?.id);
}
