// "Start Training" -> "Create a config from the template…": a built-in size or an imported model
// (then LoRA or full fine-tuning). The path written is relative to the config (written at the
// workspace root) when the model is inside the workspace, else absolute.
import * as vscode from 'vscode';
import { isAbsolute, relative } from 'node:path';
import type { ImportedModel } from '../../backend/core/protocol.js';
import type { Services } from '../services.js';
import { DEFAULT_LORA, PRESETS, modelSummary, type TemplateModel } from './model-card.js';
import { importModel } from './import-model.js';

type Item = vscode.QuickPickItem & { preset?: string; model?: ImportedModel; importNew?: true };

export async function pickTemplateModel(s: Services, configFolder: string): Promise<TemplateModel | undefined> {
  const models = await s.client
    .request('models/list', {})
    .catch((e) => (s.output.warn(`models: ${String(e)}`), [] as ImportedModel[]));
  const items: Item[] = [
    { label: 'Built-in sizes (trained from scratch, character tokenizer)', kind: vscode.QuickPickItemKind.Separator },
    ...PRESETS.map((p) => ({ label: p, preset: p })),
    { label: 'Imported models', kind: vscode.QuickPickItemKind.Separator },
    ...models.map((m) => ({ label: m.name, description: modelSummary(m), detail: m.dir, model: m })),
    {
      label: '$(cloud-download) Import Model…',
      detail: 'a Hugging Face model folder, or one from the Hugging Face cache',
      importNew: true as const,
    },
  ];
  const pick = await vscode.window.showQuickPick<Item>(items, {
    title: 'Start training: model',
    placeHolder: 'A built-in size or an imported model',
    matchOnDetail: true,
    ignoreFocusOut: true,
  });
  if (!pick) return undefined;
  if (pick.preset) return { preset: pick.preset };
  const model = pick.importNew ? await importModel(s) : pick.model;
  if (!model) return undefined;
  const lora = await pickLora(model);
  if (lora === undefined) return undefined;
  return { checkpoint: configPath(model.dir, configFolder), name: model.name, lora };
}

/** LoRA (adapters only) or full fine-tuning; undefined when dismissed. */
export async function pickLora(m: ImportedModel): Promise<boolean | undefined> {
  const LORA = {
    label: `LoRA (rank ${DEFAULT_LORA.rank}, alpha ${DEFAULT_LORA.alpha})`,
    detail: 'trains small adapters only; the base weights stay frozen (less memory; PEFT export)',
    lora: true,
  };
  const FULL = {
    label: 'Full fine-tuning',
    detail: `trains all ${modelSummary(m).split(' · ')[1]} parameters`,
    lora: false,
  };
  const pick = await vscode.window.showQuickPick([LORA, FULL], {
    title: `Train ${m.name}: LoRA or full`,
    ignoreFocusOut: true,
  });
  return pick?.lora;
}

/** The model folder as a config at `configFolder` should name it. */
export function configPath(dir: string, configFolder: string): string {
  const rel = relative(configFolder, dir);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : dir;
}
