// Train DPO on Curated Pairs…: the UI path from curation to DPO (issue 40 item 12). The pairs a run's
// buffer makes (a promoted response over a rejected one of the same task, the higher of two ratings,
// long2short's marks: buffer/pairs.ts) are counted by the backend (`buffer/pairs`); a config is
// written beside the workspace's configs that trains the run's newest checkpoint with DPO on those
// pairs (`mode: train`, `buffer.train_from` the run's buffer), and opened for review with its Start
// Training button: nothing starts unseen, nothing of the user's is overwritten.
import * as vscode from 'vscode';
import { stringify } from 'yaml';
import type { RunInfo } from '../../backend/core/protocol.js';
import { showBackendError } from '../errors.js';
import type { Services } from '../services.js';
import { runPickItems } from './run-picks.js';
import { unusedUri } from './unused-name.js';
import { runIdArg } from './run-from-arg.js';

/** Pairs per step (the batch is twice that: chosen, rejected rows). */
const PAIRS_PER_STEP = 8;
/** Passes over the pairs the config asks for. */
const EPOCHS = 3;

interface SourceConfig {
  seed?: number;
  taskset?: unknown;
  eval?: unknown;
  workflow?: { name?: string; reward?: string };
}

/**
 * The DPO config of RUN on its pairs: the run's newest checkpoint as the model, the run's buffer as
 * the rows, its eval set and reward to measure held-out accuracy before and after.
 */
export function dpoConfig(
  run: RunInfo & { config?: unknown },
  pairs: number,
  checkpoint: string,
  name: string,
): Record<string, unknown> {
  const src = (run.config ?? {}) as SourceConfig;
  const perStep = Math.max(1, Math.min(PAIRS_PER_STEP, pairs));
  return {
    name,
    mode: 'train',
    ...(src.seed !== undefined ? { seed: src.seed } : {}),
    model: { checkpoint },
    ...(src.taskset ? { taskset: src.taskset } : {}),
    ...(src.eval ? { eval: src.eval } : {}),
    ...(src.workflow ? { workflow: { name: src.workflow.name, reward: src.workflow.reward } } : {}),
    algorithm: { name: 'dpo' },
    trainer: { batch_size: 2 * perStep, steps: Math.max(1, Math.ceil((EPOCHS * pairs) / perStep)) },
    buffer: { train_from: { path: run.bufferPath, run: run.id } },
  };
}

export function dpoConfigText(
  run: RunInfo & { config?: unknown },
  counts: { total: number; byOrigin: Record<string, number> },
  checkpoint: string,
  name: string,
): string {
  const origins = Object.entries(counts.byOrigin)
    .filter(([, n]) => n > 0)
    .map(([o, n]) => `${n} ${o}`)
    .join(', ');
  return (
    `# DPO on the ${counts.total} preference pair(s) curated in run ${run.name ?? run.id} (${run.id}): ${origins}.\n` +
    `# The model starts from the run's newest checkpoint; the pairs are read from the run's buffer\n` +
    `# (copied into this run's own at its start). ${EPOCHS} passes over the pairs, ${PAIRS_PER_STEP} a step.\n` +
    stringify(dpoConfig(run, counts.total, checkpoint, name))
  );
}

/** Pick a run, count its pairs, write and open the DPO config. */
export async function trainDpo(s: Services, arg?: unknown): Promise<vscode.Uri | undefined> {
  await s.state.refreshRuns().catch(() => undefined);
  const runs = s.state.runs.filter((r) => r.bufferPath && r.checkpoints?.length);
  const id = runIdArg(arg);
  let run = id ? runs.find((r) => r.id === id) : undefined;
  if (!run) {
    if (!runs.length) {
      await vscode.window.showInformationMessage(
        'No run with a checkpoint and a buffer yet: DPO trains a run\u2019s model on the pairs curated in its buffer.',
      );
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(runPickItems(runs), {
      title: 'Train DPO on curated pairs: run',
      placeHolder: 'The run whose promoted / rejected / rated responses make the pairs',
      ignoreFocusOut: true,
    });
    run = runs.find((r) => r.id === pick?.id);
  }
  if (!run) return undefined;
  let counts: { total: number; byOrigin: Record<string, number> };
  try {
    counts = await s.client.request('buffer/pairs', { buffer: { path: run.bufferPath }, runId: run.id });
  } catch (e) {
    await showBackendError('Train DPO', e, s.output);
    return undefined;
  }
  if (counts.total === 0) {
    await vscode.window.showWarningMessage(
      `Run ${run.name ?? run.id} has no preference pairs yet. A pair is a promoted response over a rejected one of the same task, or the higher of two rated responses of a task: curate some in the Experience Browser first.`,
      { modal: false },
    );
    return undefined;
  }
  const newest = [...(run.checkpoints ?? [])].sort((a, b) => a.version - b.version).at(-1)!;
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!folder) {
    await vscode.window.showWarningMessage('Open a folder first: the DPO config is written into the workspace.');
    return undefined;
  }
  const base = `${(run.name ?? run.id).replace(/[^\w.-]+/g, '-')}-dpo`;
  const uri = await unusedUri(folder, `${base}.rft.yaml`);
  const name = uri.path
    .split('/')
    .pop()!
    .replace(/\.rft\.yaml$/, '');
  const text = dpoConfigText(run, counts, newest.path, name);
  await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(text));
  await vscode.window.showTextDocument(uri);
  void vscode.window.showInformationMessage(
    `Wrote ${vscode.workspace.asRelativePath(uri)}: DPO on ${counts.total} pair(s) of ${run.name ?? run.id}, from its v${newest.version}. Review it, then Start Training.`,
  );
  return uri;
}
