// Training commands: start (pick or create a config), stop, pause, resume (Evaluate is in
// evaluate.ts). They need a trusted workspace; the backend answers NotAvailable until the
// coordinator is wired in.
import * as vscode from 'vscode';
import type { RunInfo } from '../../backend/core/protocol.js';
import { errorFix, oneLineReason, showBackendError, splitFix, toastLine } from '../errors.js';
import type { Services } from '../services.js';
import { configTemplate, domainOf, inferFormat, templateRunName, type TemplateFiles } from '../templates.js';
import { takenRunNames } from './run-names.js';
import { requireTrust } from '../trust.js';
import { TASKSET_GLOB } from '../views/tasksets-tree.js';
import { pickTemplateModel } from '../models/model-pick.js';
import { modelLines, trainerLines } from '../models/model-card.js';
import { unusedUri } from './unused-name.js';
import { dataFilesClean } from './taskset-gate.js';
import { runPickItems } from './run-picks.js';
import { firstRecords } from '../field-mapping.js';
import { detectTaskset, readHead } from '../taskset-detect.js';
import { runIdArg } from './run-from-arg.js';

export const CONFIG_GLOB = '**/*.rft.{yaml,yml}';

async function pickConfig(s: Services): Promise<vscode.Uri | undefined> {
  const configs = await vscode.workspace.findFiles(CONFIG_GLOB, '**/node_modules/**', 100);
  const CREATE = '$(add) Create a config from the template…';
  const pick = await vscode.window.showQuickPick([...configs.map((u) => vscode.workspace.asRelativePath(u)), CREATE], {
    title: 'Start training: config',
    ignoreFocusOut: true,
  });
  if (!pick) return undefined;
  if (pick !== CREATE) return configs.find((u) => vscode.workspace.asRelativePath(u) === pick);
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) return undefined;
  // A built-in size or an imported model (LoRA or full).
  const model = await pickTemplateModel(s, folder.uri.fsPath);
  if (!model) return undefined;
  const { ts, files } = await templateFiles(s);
  const uri = await unusedUri(folder.uri, 'train.rft.yaml');
  const name = templateRunName(ts, 'preset' in model ? model.preset : model.name, await takenRunNames(s.state.runs));
  await vscode.workspace.fs.writeFile(
    uri,
    new TextEncoder().encode(configTemplate(ts, domainOf(ts), modelLines(model), files, trainerLines(model), name)),
  );
  await vscode.window.showTextDocument(uri);
  // Opened for review (steps, the files and field names it picked up), not started unseen.
  const rel = vscode.workspace.asRelativePath(uri);
  s.output.info(
    `Wrote ${rel} from the template (taskset ${ts}${files.eval ? `, eval ${files.eval.path}` : ''}${files.experts ? `, experts ${files.experts.path}` : ''}).`,
  );
  void vscode.window
    .showInformationMessage(
      `Wrote ${rel} from the template for your files. Review it, then start it.`,
      'Start Training',
    )
    .then((p) => p && startTraining(s, uri));
  return undefined;
}

/** A held-out file by its name: `eval.jsonl`, `math-test.jsonl`, `heldout.csv`, `dev.jsonl`. */
const EVAL_NAME = /(^|[-_.])(eval|test|heldout|held-out|valid|validation|dev)([-_.]|$)/i;

/** The first records of a taskset file in any format the backend reads (to see its field names and values). */
function headRecords(uri: vscode.Uri): Record<string, unknown>[] {
  return firstRecords(readHead(uri.fsPath), uri.fsPath, 20);
}

/**
 * What the template points at: the workspace's taskset (in tasksets/, or a file of the user's own
 * found by its records), a held-out file named like one (else the run holds a share of the taskset
 * out or has no eval set), an experts file (named so, or read as demonstrations: `{problem, worked}`),
 * and the `format` mapping each needs when its records use other names (`question` for prompt).
 */
export async function templateFiles(s: Services): Promise<{ ts: string; files: TemplateFiles }> {
  const listed = s.tasksets.list();
  const found = listed.length ? listed : await vscode.workspace.findFiles(TASKSET_GLOB, '**/node_modules/**', 100);
  const rel = (u: vscode.Uri) => vscode.workspace.asRelativePath(u, false);
  const name = (u: vscode.Uri) => u.path.split('/').pop()!;
  const expertLike = (u: vscode.Uri) =>
    /expert/i.test(name(u)) || detectTaskset(u.fsPath, readHead(u.fsPath))?.role === 'expert';
  const train = found.find((u) => !EVAL_NAME.test(name(u)) && !expertLike(u));
  const held = found.find((u) => u !== train && EVAL_NAME.test(name(u)) && !expertLike(u));
  const experts =
    found.find(expertLike) ??
    (await vscode.workspace.findFiles('**/*expert*.{jsonl,json}', '**/node_modules/**', 1))[0];
  const files: TemplateFiles = {};
  if (train) files.format = inferFormat(headRecords(train));
  if (held) files.eval = { path: rel(held), format: inferFormat(headRecords(held)) };
  if (experts) files.experts = { path: rel(experts), format: inferFormat(headRecords(experts), 'expert') };
  return { ts: train ? rel(train) : 'tasksets/math.jsonl', files };
}

async function pickRun(s: Services, arg: unknown, want: RunInfo['status'][]): Promise<string | undefined> {
  const id = runIdArg(arg);
  if (id !== undefined) return id;
  const runs = s.state.runs.filter((r) => want.includes(r.status));
  if (runs.length === 0) {
    void vscode.window.showInformationMessage(`No run is ${want.join(' or ')}.`);
    return undefined;
  }
  // Runs of one name told apart by status, step, start time and short id (run-picks.ts).
  const pick = await vscode.window.showQuickPick(runPickItems(runs), {
    title: 'Run',
    matchOnDescription: true,
    matchOnDetail: true,
    ignoreFocusOut: true,
  });
  return pick?.id;
}

/** Starts a run from a config (picked, or created from the template); returns its id once started. */
export async function startTraining(s: Services, arg?: vscode.Uri): Promise<string | undefined> {
  if (!requireTrust('Starting training')) return;
  const uri = arg ?? (await pickConfig(s));
  if (!uri) return;
  // A config with problems is shown in Problems at once, instead of starting a run that dies.
  const found = await s.configs.checkFile(uri).catch((e) => (s.output.warn(`config check: ${String(e)}`), []));
  // Warnings (a renamed key's old spelling) stay in Problems and do not stop the run.
  const issues = found.filter((i) => i.severity !== 'warning');
  if (issues.length) {
    const rel = vscode.workspace.asRelativePath(uri);
    s.output.error(
      `Start training: ${rel} has ${issues.length} problem${issues.length === 1 ? '' : 's'}:\n  ${issues.map((i) => `${rel}${i.line ? `:${i.line}` : ''}: ${i.field}: ${i.message}`).join('\n  ')}`,
    );
    // The first problem in one line, with its fix when it says one (a did-you-mean, a missing file).
    const first = `${issues[0]!.field}: ${issues[0]!.message}`;
    const fix = errorFix(first);
    // A refusal that says its one fix: the toast says what is wrong, short, and that fix (the detail is in Problems).
    const more = issues.length > 1 ? ` (${issues.length - 1} more in Problems)` : '';
    const text = splitFix(first).fix
      ? `${rel}: ${toastLine(first)}${more} The run was not started.`
      : `${rel}: ${issues.length} problem${issues.length === 1 ? '' : 's'} (first: ${oneLineReason(first)}). ${fix ? `${fix} ` : ''}The run was not started.`;
    const pick = await vscode.window.showErrorMessage(text, 'Show Problems', 'Show Log');
    if (pick === 'Show Log') s.output.show();
    else if (pick) await vscode.commands.executeCommand('workbench.actions.view.problems');
    return undefined;
  }
  // A taskset, eval or experts file with errors: not a run that skips them or fails at step 0.
  if (!(await dataFilesClean(s, uri))) return undefined;
  try {
    s.output.info(`Starting a run from ${vscode.workspace.asRelativePath(uri)}…`);
    const run = await s.client.request('runs/start', { configPath: uri.fsPath });
    await s.state.refreshRuns();
    const kept = await followRunBuffer(s, run.id);
    // A run that failed at once is told by the run monitor (reason, log, actions), not as "started".
    if (s.state.runs.find((r) => r.id === run.id)?.status !== 'failed') {
      const started = `Run ${run.id} started from ${vscode.workspace.asRelativePath(uri)}.`;
      announce(s, run.id, started, kept);
    }
    await s.openDashboard(run.id);
    return run.id;
  } catch (err) {
    await showBackendError('Start training', err, s.output);
    return undefined;
  }
}

/**
 * The Buffer view and the experience browser stay on the buffer the user has open (another run's
 * experts and edits do not vanish when a run starts); with none open, or this run's own, they show
 * this run's. Returns the name of the run whose buffer stays shown, when that is another run's.
 */
async function followRunBuffer(s: Services, runId: string): Promise<string | undefined> {
  const open = s.state.bufferPath;
  const own = s.state.runs.find((r) => r.id === runId)?.bufferPath;
  if (open && open !== own) {
    const shown = s.state.runs.find((r) => r.bufferPath === open);
    return shown ? (shown.name ?? shown.id) : vscode.workspace.asRelativePath(open);
  }
  await s.state.openBuffer({ runId }).catch((e) => s.output.warn(`buffer of ${runId}: ${String(e)}`));
  return undefined;
}

/** Says a run started (or resumed); when the views stayed on another buffer, offers to switch to this run's. */
function announce(s: Services, runId: string, what: string, kept: string | undefined): void {
  const SWITCH = 'Show Its Buffer';
  const text = kept ? `${what} The Buffer view and browser stay on ${kept}'s buffer.` : what;
  void vscode.window.showInformationMessage(text, ...(kept ? [SWITCH] : []), 'Show Log').then(async (p) => {
    if (p === 'Show Log') s.output.show();
    else if (p === SWITCH)
      await s.state.openBuffer({ runId }).catch((e) => showBackendError('Open buffer', e, s.output));
  });
}

export async function stopTraining(s: Services, arg?: unknown): Promise<void> {
  return endRun(s, arg, 'stop');
}

/** Pause: like Stop (after the current step, with a checkpoint), recorded as paused; Resume continues. */
export async function pauseTraining(s: Services, arg?: unknown): Promise<void> {
  return endRun(s, arg, 'pause');
}

/** Stop or pause: the run ends after its current step, so `stopping…` shows meanwhile (Runs view, dashboard, a progress notification). */
async function endRun(s: Services, arg: unknown, how: 'stop' | 'pause'): Promise<void> {
  const id = await pickRun(s, arg, how === 'stop' ? ['running', 'paused'] : ['running']);
  if (!id) return;
  const what = how === 'stop' ? 'stopping…' : 'pausing…';
  const name = s.state.runs.find((r) => r.id === id)?.name ?? id;
  try {
    const r = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Run ${name}: ${what} (after its current step, with a checkpoint)`,
      },
      () =>
        s.state.whilePending(id, what, () =>
          s.client.request(how === 'stop' ? 'runs/stop' : 'runs/pause', { runId: id }),
        ),
    );
    await s.state.refreshRuns();
    s.output.info(`Run ${name} ${r.status}${r.step !== undefined ? ` at step ${r.step}` : ''}.`);
  } catch (err) {
    await showBackendError(how === 'stop' ? 'Stop training' : 'Pause training', err, s.output);
  }
}

export async function resumeTraining(s: Services, arg?: unknown): Promise<void> {
  if (!requireTrust('Resuming training')) return;
  const id = await pickRun(s, arg, ['paused', 'stopped', 'failed']);
  if (!id) return;
  const run = s.state.runs.find((r) => r.id === id);
  const name = run?.name ?? id;
  // A resume that the same config would refuse again is not started (backend resume-state.ts).
  if (run?.resumable === false) {
    void vscode.window.showErrorMessage(
      `Run ${name} was not resumed: ${toastLine(run.resumeRefusal ?? 'it cannot be resumed')}`,
    );
    return;
  }
  // Its config file changed since it started: the user chooses which config the resume takes.
  let config: 'new' | 'kept' | undefined;
  if (run?.configChanged) {
    const NEW = 'Resume with New Config';
    const KEEP = 'Resume with Started Config';
    const pick = await vscode.window.showWarningMessage(
      `Run ${name}: ${vscode.workspace.asRelativePath(run.configChanged)} changed since the run started.`,
      { modal: true, detail: 'The new config is checked first; the started one is what the run stored when it began.' },
      NEW,
      KEEP,
    );
    if (!pick) return;
    config = pick === NEW ? 'new' : 'kept';
  }
  try {
    await s.client.request('runs/resume', { runId: id, ...(config ? { config } : {}) });
    await s.state.refreshRuns();
    const kept = await followRunBuffer(s, id);
    if (kept) announce(s, id, `Run ${s.state.runs.find((r) => r.id === id)?.name ?? id} resumed.`, kept);
  } catch (err) {
    await showBackendError('Resume training', err, s.output);
  }
}

// Evaluate Checkpoint… and the checkpoint pick list live in evaluate.ts.
export { evaluateCheckpoint, pickCheckpoint } from './evaluate.js';
