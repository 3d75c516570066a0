// Buffer commands: open a buffer (run or file), export it as JSONL, add the editor selection as
// an expert example for a task the user picks from the buffer's tasks (its prompt taken from the
// buffer) or a new one (id and prompt typed).
import * as vscode from 'vscode';
import { showBackendError } from '../errors.js';
import type { Services } from '../services.js';
import { runPickItems } from './run-picks.js';

export async function openBuffer(s: Services, arg?: vscode.Uri | string): Promise<void> {
  let ref: { path?: string; runId?: string } | undefined;
  if (typeof arg === 'string') ref = { runId: arg };
  else if (arg) ref = { path: arg.fsPath };
  else {
    const runs = runPickItems(s.state.runs).map((r) => ({ ...r, ref: { runId: r.id } }));
    const FILE = {
      label: '$(folder-opened) Open a buffer file…',
      description: '',
      ref: undefined as undefined | { runId: string },
    };
    const pick = await vscode.window.showQuickPick<vscode.QuickPickItem & { ref?: { runId: string } }>(
      [...runs, FILE],
      { title: 'Open buffer', matchOnDescription: true, matchOnDetail: true, ignoreFocusOut: true },
    );
    if (!pick) return;
    if (pick.ref) ref = pick.ref;
    else {
      const f = await vscode.window.showOpenDialog({
        canSelectMany: false,
        filters: { 'Buffer (SQLite)': ['sqlite', 'db'] },
        title: 'Buffer file',
        ...inWorkspace(),
      });
      if (!f?.[0]) return;
      ref = { path: f[0].fsPath };
    }
  }
  try {
    await s.state.openBuffer(ref);
  } catch (err) {
    await showBackendError('Open buffer', err, s.output);
  }
}

/** Dialogs start in the workspace folder, not the active file's. */
function inWorkspace(): { defaultUri?: vscode.Uri } {
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  return root ? { defaultUri: root } : {};
}

export async function exportBuffer(s: Services): Promise<void> {
  if (!s.state.bufferPath) {
    void vscode.window.showWarningMessage('Open a buffer first (RFT Studio: Open Buffer).');
    return;
  }
  // Starts in the workspace (not the active file's folder), named after the buffer.
  const base = s.state.bufferPath
    .split(/[\\/]/)
    .pop()!
    .replace(/\.[^.]*$/, '');
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  const target = await vscode.window.showSaveDialog({
    filters: { JSONL: ['jsonl'] },
    title: 'Export buffer as JSONL',
    ...(root ? { defaultUri: vscode.Uri.joinPath(root, `${base}.jsonl`) } : {}),
  });
  if (!target) return;
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Exporting buffer…' },
    async () => {
      try {
        const r = await s.client.request('buffer/export', {
          buffer: { path: s.state.bufferPath },
          file: target.fsPath,
        });
        void vscode.window.showInformationMessage(
          `Exported ${r.written} experiences to ${vscode.workspace.asRelativePath(target)}.`,
        );
      } catch (err) {
        await showBackendError('Export buffer', err, s.output);
      }
    },
  );
}

export async function addSelectionAsExpert(s: Services): Promise<void> {
  const ed = vscode.window.activeTextEditor;
  const response = ed && !ed.selection.isEmpty ? ed.document.getText(ed.selection) : '';
  if (!response.trim()) {
    void vscode.window.showWarningMessage('Select the text that should become the expert response.');
    return;
  }
  if (!s.state.bufferPath) {
    void vscode.window.showWarningMessage('Open a buffer first (RFT Studio: Open Buffer).');
    return;
  }
  const task = await pickExpertTask(s, s.state.bufferPath);
  if (!task) return;
  const { taskId, prompt, runId } = task;
  try {
    const r = await s.client.request('feedback/addExpert', {
      buffer: { path: s.state.bufferPath },
      taskId,
      prompt,
      response,
      ...(runId ? { runId } : {}),
    });
    void vscode.window
      .showInformationMessage(`Added expert example ${r.expertId} for task ${taskId}.`, 'Undo')
      .then(async (pick) => {
        if (pick)
          await s.client.request('feedback/undo', { buffer: { path: s.state.bufferPath }, changeId: r.changeId });
      });
  } catch (err) {
    await showBackendError('Add expert example', err, s.output);
  }
}

type TaskItem = vscode.QuickPickItem & { taskId?: string };

/** The task an expert answers: one of the buffer's tasks (prompt from its experiences), or a new one. */
export async function pickExpertTask(
  s: Services,
  bufferPath: string,
): Promise<{ taskId: string; prompt: string; runId?: string } | undefined> {
  const buffer = { path: bufferPath };
  // The active run, else the newest run whose buffer this is: its taskset's tasks are listed too.
  const run =
    s.state.activeRun?.id ??
    [...s.state.runs]
      .filter((r) => r.bufferPath === bufferPath)
      .sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0))[0]?.id;
  // Tasks with rollouts (pass rates), the prompt of each from the newest rows, and every task of the
  // run's taskset (those without rollouts yet too).
  const [stats, rows, taskset] = await Promise.all([
    s.client.request('buffer/taskStats', { buffer, ...(run ? { runId: run } : {}) }).catch(() => []),
    s.client.request('buffer/list', { buffer, sort: 'createdAt', descending: true, offset: 0, limit: 500 }).then(
      (r) => r.rows,
      () => [],
    ),
    run
      ? s.client.request('buffer/tasks', { buffer, runId: run }).then(
          (r) => r.tasks,
          () => [],
        )
      : Promise.resolve([] as { id: string; prompt: string }[]),
  ]);
  const preview = new Map<string, string>();
  for (const r of rows) if (!preview.has(r.taskId)) preview.set(r.taskId, r.promptPreview);
  const fullPrompt = new Map(taskset.map((t) => [t.id, t.prompt]));
  for (const t of taskset) if (!preview.has(t.id)) preview.set(t.id, t.prompt);
  const ids = [...new Set([...stats.map((t) => t.taskId), ...preview.keys()])].sort((a, b) =>
    a.localeCompare(b, 'en', { numeric: true }),
  );
  const stat = new Map(stats.map((t) => [t.taskId, t]));
  const NEW: TaskItem = { label: '$(add) A new task…', detail: 'type its id and prompt' };
  const items: TaskItem[] = [
    ...ids.map((id) => {
      const st = stat.get(id);
      return {
        label: id,
        description: st ? `pass ${Math.round(st.passRate * 100)}% · ${st.rollouts} rollouts` : 'no rollouts yet',
        detail: (preview.get(id) ?? '').replace(/\s+/g, ' ').slice(0, 120),
        taskId: id,
      };
    }),
    NEW,
  ];
  const pick = await vscode.window.showQuickPick(items, {
    title: 'Expert example: which task does the selection answer?',
    placeHolder: 'a task of the buffer (type to filter by id or prompt), or a new one',
    matchOnDetail: true,
    ignoreFocusOut: true,
  });
  if (!pick) return undefined;
  // A task without rollouts yet: its prompt from the taskset (one with rollouts takes its experiences' prompt below).
  const rolledOut = new Set(rows.map((r) => r.taskId));
  if (pick.taskId && !rolledOut.has(pick.taskId) && fullPrompt.has(pick.taskId) && run)
    return { taskId: pick.taskId, prompt: fullPrompt.get(pick.taskId)!, runId: run };
  if (pick.taskId) {
    // The task's own prompt, in full (the list's preview is cut), and the run it belongs to.
    const row = (
      await s.client.request('buffer/list', { buffer, filter: { taskId: pick.taskId }, offset: 0, limit: 1 })
    ).rows[0];
    const full = row && (await s.client.request('buffer/get', { buffer, id: row.id }));
    if (full) return { taskId: pick.taskId, prompt: full.promptText, runId: full.runId };
  }
  const taskId =
    pick.taskId ??
    (await vscode.window.showInputBox({
      title: 'Expert example: new task id',
      prompt: 'Id of the new task',
      ignoreFocusOut: true,
      validateInput: (v) =>
        !v.trim()
          ? 'an id'
          : ids.includes(v.trim())
            ? `${v.trim()} is a task of the buffer: pick it from the list`
            : undefined,
    }));
  if (!taskId) return undefined;
  const prompt = await vscode.window.showInputBox({
    title: `Expert example: prompt of ${taskId}`,
    prompt: 'The prompt of the task',
    ignoreFocusOut: true,
  });
  if (prompt === undefined) return undefined;
  return { taskId: taskId.trim(), prompt, ...(run ? { runId: run } : {}) };
}
