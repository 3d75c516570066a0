// Import Model…: a model of the Hugging Face cache or a folder, checked by the backend and
// remembered. Its own file so that the model pick (which offers "Import a model…") and the model
// commands both use it without importing each other.
import * as vscode from 'vscode';
import type { ImportedModel } from '../../backend/core/protocol.js';
import { showBackendError } from '../errors.js';
import type { Services } from '../services.js';
import { formatParams } from './model-card.js';
import { browseFolder } from '../pick-folder.js';

/** Fired after the list of imported models changed (the Models view refreshes). */
export const modelsChanged = new vscode.EventEmitter<void>();

type CacheItem = vscode.QuickPickItem & { dir?: string; browse?: true };

/** Import Model…: a model from the Hugging Face cache or a folder, checked by the backend and remembered. */
export async function importModel(s: Services): Promise<ImportedModel | undefined> {
  const cache = await s.client
    .request('models/cache', {})
    .catch((e) => (s.output.warn(`HF cache: ${String(e)}`), { roots: [] as string[], models: [] }));
  const BROWSE: CacheItem = {
    label: '$(folder-opened) Browse…',
    detail: 'a folder with config.json and safetensors weights',
    browse: true,
    alwaysShow: true,
  };
  const items: CacheItem[] = [
    ...(cache.models.length ? [{ label: 'Hugging Face cache', kind: vscode.QuickPickItemKind.Separator }] : []),
    ...cache.models.map((m) => ({ label: m.repo, description: m.revision.slice(0, 12), detail: m.dir, dir: m.dir })),
    { label: '', kind: vscode.QuickPickItemKind.Separator },
    BROWSE,
  ];
  const pick = await vscode.window.showQuickPick<CacheItem>(items, {
    title: 'Import model',
    placeHolder: cache.models.length
      ? 'A model from the Hugging Face cache, or a folder'
      : `No model in the Hugging Face cache (${cache.roots.join(', ')}): browse for a folder`,
    matchOnDetail: true,
    ignoreFocusOut: true,
  });
  if (!pick) return undefined;
  let dir = pick.dir;
  if (pick.browse) dir = await browseFolder('Model folder (config.json + safetensors)', 'Import');
  if (!dir) return undefined;
  const target = dir;
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Checking ${target}` },
    async () => {
      try {
        const m = await s.client.request('models/import', { dir: target });
        s.output.info(
          `Imported ${m.name}: ${m.architecture}, ${formatParams(m.parameters)} parameters, ${m.dtype} (${m.dir})`,
        );
        modelsChanged.fire();
        void vscode.window
          .showInformationMessage(
            `Imported ${m.name}: ${m.architecture}, ${formatParams(m.parameters)} parameters, ${m.dtype}.`,
            'Start Training',
          )
          .then((p) => p && vscode.commands.executeCommand('rftStudio.trainWithModel', m));
        return m;
      } catch (err) {
        await showBackendError('Import model', err, s.output);
        return undefined;
      }
    },
  );
}
