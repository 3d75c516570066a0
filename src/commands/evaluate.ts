// Evaluate Checkpoint… from the palette, the Runs view (a run's checkpoints) and the dashboard: a
// run's checkpoint or any folder (an exported Hugging Face folder), on the run's held-out split, a
// workspace config's eval set, or a taskset file read as the workspace config reads it (its
// `format:` mapping and reward). One progress notification that ends when the evaluation ends; a
// failure is told after it, in one line (errors.ts).
import * as vscode from 'vscode';
import { dirname, resolve } from 'node:path';
import YAML from 'yaml';
import type { RunInfo } from '../../backend/core/protocol.js';
import { showBackendError } from '../errors.js';
import type { Services } from '../services.js';
import { requireTrust } from '../trust.js';
import { TASKSET_GLOB } from '../views/tasksets-tree.js';
import { detectTaskset, readHead } from '../taskset-detect.js';
import { accuracyBySteps, checkpointItems, evalResultLine, type CheckpointItem } from './checkpoint-picks.js';

const CONFIG_GLOB = '**/*.rft.{yaml,yml}';

export type PickedCheckpoint = Pick<CheckpointItem, 'runId' | 'runName' | 'version' | 'step'> & { path: string };

/** What to evaluate on: a taskset file ('' = an eval set), and the workspace config that reads it. */
export interface EvalTarget {
  taskset: string;
  config?: string;
  /** For messages: `eval.jsonl`, `the held-out split`, `the eval set of train.rft.yaml`. */
  on: string;
  /** A file no config names: its own mapping, as the Tasksets view reads it (not the run's). */
  format?: Record<string, string>;
}

/** A file's own mapping as the editor reads it (detected from its first records; {} when it uses the schema's names). */
export function ownFormat(file: string): Record<string, string> {
  return (detectTaskset(file, readHead(file))?.format as Record<string, string> | undefined) ?? {};
}

/** The taskset / eval file paths a config names, resolved against the config's folder. */
export function configFiles(configPath: string, text: string): string[] {
  let doc: unknown;
  try {
    doc = YAML.parse(text);
  } catch {
    return [];
  }
  if (!doc || typeof doc !== 'object') return [];
  const out: string[] = [];
  for (const key of ['eval', 'taskset']) {
    const p = ((doc as Record<string, unknown>)[key] as { path?: unknown } | undefined)?.path;
    if (typeof p === 'string' && p) out.push(resolve(dirname(configPath), p));
  }
  return out;
}

async function workspaceConfigs(): Promise<{ uri: vscode.Uri; files: string[] }[]> {
  const uris = await vscode.workspace.findFiles(CONFIG_GLOB, '**/node_modules/**', 100);
  uris.sort((a, b) => a.fsPath.localeCompare(b.fsPath));
  const out: { uri: vscode.Uri; files: string[] }[] = [];
  for (const uri of uris) {
    const text = await vscode.workspace.fs.readFile(uri).then(
      (b) => new TextDecoder().decode(b),
      () => '',
    );
    out.push({ uri, files: configFiles(uri.fsPath, text) });
  }
  return out;
}

/**
 * The workspace config that reads `file`: the one naming it as taskset or eval; else, for a folder
 * outside any run (no run config to fall back on), the first workspace config (its mapping and reward).
 */
export function configFor(
  file: string,
  configs: { uri: vscode.Uri; files: string[] }[],
  ofRun: boolean,
): vscode.Uri | undefined {
  return configs.find((c) => c.files.includes(resolve(file)))?.uri ?? (ofRun ? undefined : configs[0]?.uri);
}

export async function evaluateCheckpoint(s: Services, arg?: vscode.Uri | RunInfo | string): Promise<void> {
  if (!requireTrust('Evaluating a checkpoint')) return;
  const runId = typeof arg === 'string' ? arg : arg && !(arg instanceof vscode.Uri) ? arg.id : undefined;
  const ck: PickedCheckpoint | undefined =
    arg instanceof vscode.Uri ? { path: arg.fsPath } : await pickCheckpoint(s, 'Evaluate checkpoint', runId);
  if (!ck) return;
  const target = await pickTarget(ck);
  if (!target) return;
  await evaluateWithProgress(s, ck, target);
}

/** The run's held-out split (a run's checkpoint), each workspace config's eval set, or a taskset file. */
async function pickTarget(ck: PickedCheckpoint): Promise<EvalTarget | undefined> {
  const tasksets = await vscode.workspace.findFiles(TASKSET_GLOB, '**/node_modules/**', 100);
  const configs = await workspaceConfigs();
  const rel = (u: vscode.Uri | string) => vscode.workspace.asRelativePath(u, false);
  const items: (vscode.QuickPickItem & { target: EvalTarget })[] = [];
  if (ck.runId)
    items.push({ label: "$(beaker) The run's held-out split", target: { taskset: '', on: 'the held-out split' } });
  for (const c of configs)
    items.push({
      label: `$(beaker) The eval set of ${rel(c.uri)}`,
      description: 'its files, mapping and reward',
      target: { taskset: '', config: c.uri.fsPath, on: `the eval set of ${rel(c.uri)}` },
    });
  for (const u of tasksets) {
    const config = configFor(u.fsPath, configs, !!ck.runId);
    // Named by that config: read as it maps it; else with the file's own mapping (the config or run gives the reward).
    const named =
      !!config && configs.some((c) => c.uri.fsPath === config.fsPath && c.files.includes(resolve(u.fsPath)));
    items.push({
      label: rel(u),
      ...(config
        ? { description: named ? `read as ${rel(config)} reads it` : `its own fields; the reward of ${rel(config)}` }
        : {}),
      target: {
        taskset: u.fsPath,
        ...(config ? { config: config.fsPath } : {}),
        on: rel(u),
        ...(named ? {} : { format: ownFormat(u.fsPath) }),
      },
    });
  }
  const pick = await vscode.window.showQuickPick(items, { title: 'Evaluate on', ignoreFocusOut: true });
  return pick?.target;
}

/**
 * Runs the evaluation under a progress notification that ends with it; the result (or the failure,
 * in one line with Show Log) is told after. Returns the result, or the error for the caller to show.
 */
export async function evaluateWithProgress(
  s: Services,
  ck: PickedCheckpoint,
  target: EvalTarget,
): Promise<{ accuracy: number; tasks: number } | { error: unknown }> {
  const name =
    ck.version !== undefined
      ? `v${ck.version}${ck.runName ? ` of ${ck.runName}` : ''}`
      : vscode.workspace.asRelativePath(ck.path);
  let outcome: { accuracy: number; tasks: number } | { error: unknown } | undefined;
  s.output.info(
    `Evaluating ${name} on ${target.on}${target.config ? ` (config ${vscode.workspace.asRelativePath(target.config)})` : ''}…`,
  );
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Evaluating ${name} on ${target.on}`, cancellable: true },
    async (_p, token) => {
      try {
        const req = s.client.request('runs/evaluate', {
          checkpoint: ck.path,
          taskset: target.taskset,
          ...(ck.runId ? { runId: ck.runId } : {}),
          ...(target.config ? { config: target.config } : {}),
          ...(target.format ? { format: target.format } : {}),
        });
        const r = await Promise.race([req, new Promise<null>((res) => token.onCancellationRequested(() => res(null)))]);
        outcome = r ?? undefined;
      } catch (err) {
        outcome = { error: err };
      }
    },
  );
  if (!outcome) {
    s.output.info(`Evaluation of ${name} cancelled.`);
    return { error: new Error('cancelled') };
  }
  if ('error' in outcome) {
    await showBackendError(`Evaluate ${name}`, outcome.error, s.output);
    return outcome;
  }
  const line = evalResultLine({ ...ck, path: vscode.workspace.asRelativePath(ck.path) }, outcome, target.on);
  s.output.info(`Evaluated ${line}`);
  void vscode.window.showInformationMessage(`Evaluated ${line}.`);
  return outcome;
}

/** Each run's checkpoints (newest first, step and accuracy), or a folder elsewhere; `runId` keeps one run's. */
export async function pickCheckpoint(
  s: Services,
  title = 'Evaluate checkpoint',
  runId?: string,
): Promise<PickedCheckpoint | undefined> {
  await s.state.refreshRuns().catch((e) => s.output.warn(`runs: ${String(e)}`));
  const runs = s.state.runs.filter((r) => r.checkpoints?.length && (!runId || r.id === runId));
  const accuracy = new Map<string, Map<number, number>>();
  await Promise.all(
    runs.map(async (r) => {
      const pts = await s.client.request('runs/metrics', { runId: r.id }).catch(() => []);
      accuracy.set(r.id, accuracyBySteps(pts));
    }),
  );
  const BROWSE = { label: '$(folder-opened) Another checkpoint folder…', alwaysShow: true };
  const items = checkpointItems(runs, accuracy, (p) => vscode.workspace.asRelativePath(p)).map((i) =>
    i.separator ? { ...i, kind: vscode.QuickPickItemKind.Separator } : i,
  );
  const pick = await vscode.window.showQuickPick<vscode.QuickPickItem & Partial<CheckpointItem>>(
    [...items, { label: '', kind: vscode.QuickPickItemKind.Separator }, BROWSE],
    {
      title,
      placeHolder: items.length
        ? 'Newest first; type to filter by version, step, accuracy or path'
        : 'No run has checkpoints yet: pick a folder',
      matchOnDescription: true,
      matchOnDetail: true,
      ignoreFocusOut: true,
    },
  );
  if (!pick) return undefined;
  if (pick !== BROWSE) return pick as PickedCheckpoint;
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  const dir = (
    await vscode.window.showOpenDialog({
      canSelectFolders: true,
      canSelectFiles: false,
      title: 'Checkpoint folder',
      ...(root ? { defaultUri: root } : {}),
    })
  )?.[0];
  return dir ? { path: dir.fsPath } : undefined;
}
