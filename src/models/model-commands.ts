// The Models view's actions (Start Training with this model, Reveal, Remove) and
// Export Checkpoint…. The backend checks and exports (`rft model info` / `rft model export`); these
// only ask the user and show the result.
import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ImportedModel } from '../../backend/core/protocol.js';
import { showBackendError } from '../errors.js';
import type { Services } from '../services.js';
import { configTemplate, templateRunName } from '../templates.js';
import { takenRunNames } from '../commands/run-names.js';
import { requireTrust } from '../trust.js';
import { pickCheckpoint, startTraining, templateFiles } from '../commands/training.js';
import { configNameFor, modelLines, trainerLines } from './model-card.js';
import { modelsChanged } from './import-model.js';
import { exportFolderName, exportFormats, type ExportFormat } from './export-formats.js';
import { confirmExportTarget } from './export-confirm.js';
import { recheckCheckpoint } from './export-recheck.js';
import type { PickedCheckpoint } from '../commands/evaluate.js';
import { configPath, pickLora } from './model-pick.js';
import { unusedUri } from '../commands/unused-name.js';

/** The model a view action is for: the tree node ({model}) or the model itself. */
export function modelArg(arg: unknown): ImportedModel | undefined {
  if (!arg || typeof arg !== 'object') return undefined;
  const a = arg as { model?: ImportedModel; dir?: string };
  return a.model ?? (typeof a.dir === 'string' ? (a as ImportedModel) : undefined);
}

export async function removeModel(s: Services, arg: unknown): Promise<void> {
  const m = modelArg(arg);
  if (!m) return;
  try {
    await s.client.request('models/remove', { dir: m.dir });
    modelsChanged.fire();
    void vscode.window.showInformationMessage(`Removed ${m.name} from the imported models (its folder is untouched).`);
  } catch (err) {
    await showBackendError('Remove model', err, s.output);
  }
}

export async function revealModel(arg: unknown): Promise<void> {
  const m = modelArg(arg);
  if (m) await vscode.commands.executeCommand('revealFileInOS', vscode.Uri.file(m.dir));
}

/** Start Training with this model: LoRA or full, a config from the template next to the workspace root, then Start Training on it. */
export async function trainWithModel(s: Services, arg: unknown): Promise<vscode.Uri | undefined> {
  if (!requireTrust('Starting training')) return undefined;
  const m = modelArg(arg);
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!m || !folder) return undefined;
  const lora = await pickLora(m);
  if (lora === undefined) return undefined;
  // The workspace's own files as the template command finds them (a taskset outside tasksets/ by its
  // records, the eval and experts files, the format mapping of each), not only tasksets/ (issue 28:
  // the placeholder tasksets/math.jsonl was written and the run refused).
  const { ts, files } = await templateFiles(s);
  const uri = await unusedUri(folder.uri, configNameFor(m.name));
  const tm = { checkpoint: configPath(m.dir, folder.uri.fsPath), name: m.name, lora };
  const name = templateRunName(ts, m.name, await takenRunNames(s.state.runs));
  const text = configTemplate(ts, undefined, modelLines(tm), files, trainerLines(tm), name);
  await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(text));
  await vscode.window.showTextDocument(uri);
  modelsChanged.fire();
  await startTraining(s, uri);
  return uri;
}

/** Export Checkpoint…: a run's checkpoint (the Evaluate pick list), the format, the folder; runs `rft model export`. */
export async function exportCheckpoint(s: Services, arg?: vscode.Uri | PickedCheckpoint): Promise<string | undefined> {
  const picked0 =
    arg instanceof vscode.Uri ? { path: arg.fsPath } : (arg ?? (await pickCheckpoint(s, 'Export checkpoint')));
  // A running run may have deleted it already (it keeps its newest): looked for again, here and before writing.
  let ck = picked0 && (await recheckCheckpoint(s, picked0));
  if (!ck) return undefined;
  const nameOf = (c: PickedCheckpoint) =>
    c.version !== undefined ? `v${c.version} of ${c.runName}` : vscode.workspace.asRelativePath(c.path);
  let name = nameOf(ck);
  // PEFT needs LoRA adapters, GGUF a Hugging Face tokenizer: ask the checkpoint. The format list opens
  // at once, busy until the answer is in (never the checkpoint list left on screen for Enter to pick from).
  const formats = s.client.request('models/info', { dir: ck.path }).then((info) => {
    const hfTokenizer = info.tokenizer?.kind === 'hf';
    const items: (vscode.QuickPickItem & Partial<ExportFormat>)[] = exportFormats(!!info.lora, hfTokenizer);
    if (!hfTokenizer)
      items.push({
        label: "GGUF needs a Hugging Face model's own tokenizer: this checkpoint was trained from scratch",
        kind: vscode.QuickPickItemKind.Separator,
      });
    return items;
  });
  let picked: (vscode.QuickPickItem & Partial<ExportFormat>) | undefined;
  try {
    picked = await vscode.window.showQuickPick(formats, {
      title: `Export ${name}: format`,
      placeHolder: `the formats ${name} can be written in`,
      ignoreFocusOut: true,
    });
  } catch (err) {
    // Deleted by its run meanwhile: said so, and the run's newest offered (then its formats asked).
    if (!existsSync(ck.path)) {
      const again = await recheckCheckpoint(s, ck);
      return again ? exportCheckpoint(s, again) : undefined;
    }
    // A failure names what is wrong with the checkpoint.
    await showBackendError('Export checkpoint', err, s.output);
    return undefined;
  }
  if (!picked?.format) return undefined;
  const f = picked as vscode.QuickPickItem & ExportFormat;
  if (!f) return undefined;
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  const sub = exportFolderName(ck, f);
  const parent = (
    await vscode.window.showOpenDialog({
      canSelectFolders: true,
      canSelectFiles: false,
      canSelectMany: false,
      title: `Export ${name}: the folder to write ${sub}/ into (inside the workspace)`,
      openLabel: 'Export here',
      ...(root ? { defaultUri: root } : {}),
    })
  )?.[0];
  if (!parent) return undefined;
  const again = await recheckCheckpoint(s, ck);
  if (!again) return undefined;
  ck = again;
  name = nameOf(ck);
  const out = join(parent.fsPath, exportFolderName(ck, f));
  const force = await confirmExportTarget(out, f);
  if (force === undefined) return undefined;
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Exporting ${name} as ${f.label}`, cancellable: true },
    async (_p, token) => {
      try {
        const req = s.client.request('models/export', {
          checkpoint: ck.path,
          format: f.format,
          dtype: f.dtype,
          out,
          ...(force ? { force } : {}),
        });
        const r = await Promise.race([req, new Promise<null>((res) => token.onCancellationRequested(() => res(null)))]);
        if (!r) return undefined;
        const rel = vscode.workspace.asRelativePath(r.out);
        s.output.info(`Exported ${name} as ${f.label}: ${r.out}`);
        void vscode.window
          .showInformationMessage(`Exported ${name} as ${f.label}: ${rel}`, 'Reveal')
          .then((p) => p && vscode.commands.executeCommand('revealFileInOS', vscode.Uri.file(r.out)));
        return r.out;
      } catch (err) {
        await showBackendError('Export checkpoint', err, s.output);
        return undefined;
      }
    },
  );
}
