// Sidebar "Models": each imported model with its card (architecture, size, dtype, tokenizer, LoRA or
// full per run config, path) as child rows; actions on the model's item select on contextValue
// rftModel (package.json menus).
import * as vscode from 'vscode';
import type { ImportedModel } from '../../backend/core/protocol.js';
import type { BackendClient } from '../backend/client.js';
import { CONFIG_GLOB } from '../commands/training.js';
import { cardRows, modelSummary, type CardRow, type ModelUse } from './model-card.js';
import { usesOf, type ConfigText } from './config-uses.js';

export type ModelNode = { kind: 'model'; model: ImportedModel } | { kind: 'row'; model: ImportedModel; row: CardRow };

export class ModelsTree implements vscode.TreeDataProvider<ModelNode> {
  models: ImportedModel[] = [];
  private uses = new Map<string, ModelUse[]>();
  private readonly emitter = new vscode.EventEmitter<ModelNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;

  constructor(private readonly client: Pick<BackendClient, 'request'>) {}

  /** Asks the view to read again (after an import / removal, or a run config changed). */
  refresh(): void {
    this.emitter.fire(undefined);
  }

  /** The imported models from the backend, and which run configs use each (sorted by config path). */
  async load(): Promise<void> {
    this.models = await this.client.request('models/list', {});
    const configs: ConfigText[] = [];
    for (const uri of await vscode.workspace.findFiles(CONFIG_GLOB, '**/node_modules/**', 200)) {
      const text = new TextDecoder().decode(
        await vscode.workspace.fs.readFile(uri).then(undefined, () => new Uint8Array()),
      );
      configs.push({ file: uri.fsPath, rel: vscode.workspace.asRelativePath(uri), text });
    }
    configs.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
    this.uses = new Map(this.models.map((m) => [m.dir, usesOf(m.dir, configs)]));
  }

  usesOf(dir: string): ModelUse[] {
    return this.uses.get(dir) ?? [];
  }

  /** The root is read afresh each time the view asks (a few small YAML files), so the cards follow configs written by any means. */
  async getChildren(n?: ModelNode): Promise<ModelNode[]> {
    if (!n) {
      // A backend not started yet (or one without models/*) leaves the last list; onStarted refreshes.
      await this.load().catch(() => undefined);
      return this.models.map((model) => ({ kind: 'model', model }));
    }
    if (n.kind === 'model')
      return cardRows(n.model, this.usesOf(n.model.dir)).map((row) => ({ kind: 'row', model: n.model, row }));
    return [];
  }

  getTreeItem(n: ModelNode): vscode.TreeItem {
    if (n.kind === 'row') {
      const item = new vscode.TreeItem(n.row.label, vscode.TreeItemCollapsibleState.None);
      item.id = `model.${n.model.dir}.${n.row.label}`;
      item.description = n.row.value;
      item.tooltip = `${n.row.label}: ${n.row.value}`;
      return item;
    }
    const m = n.model;
    const item = new vscode.TreeItem(m.name, vscode.TreeItemCollapsibleState.Expanded);
    item.id = `model.${m.dir}`;
    item.description = modelSummary(m);
    item.tooltip = cardRows(m, this.usesOf(m.dir))
      .map((r) => `${r.label}: ${r.value}`)
      .join('\n');
    item.iconPath = new vscode.ThemeIcon('symbol-namespace');
    item.contextValue = 'rftModel';
    return item;
  }
}
