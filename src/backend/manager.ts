// Launches the backend for this workspace: finds Node (setting or PATH, clear message with a link
// to the setting when missing / too old), or attaches to `rftStudio.backendUrl`; streams the
// backend's log into the LogOutputChannel.
import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BackendClient } from './client.js';
import { isDawnLine } from '../../backend/core/dawn-lines.js';
import { findNode, type NodeFinderEnv } from './node-finder.js';
import { childConnector, tcpConnector, type Connector } from './transport.js';

export const OPEN_SETTING = 'Open Setting';

export interface ManagerDeps {
  extensionPath: string;
  version: string;
  output: vscode.LogOutputChannel;
  nodeEnv?: NodeFinderEnv;
  /** A line Dawn printed while probing for a GPU (the status bar names it as the reason for no GPU). */
  onDawnLine?(line: string): void;
}

/** Returns the client, or undefined when no usable Node was found (the user was told why). */
export async function createBackend(d: ManagerDeps): Promise<BackendClient | undefined> {
  const cfg = vscode.workspace.getConfiguration('rftStudio');
  const workspace = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const url = cfg.get<string>('backendUrl')?.trim();
  let connector: Connector;
  if (url) {
    connector = tcpConnector(url, { workspace });
    d.output.info(`attaching to backend at ${url.replace(/\?.*$/, '')}`);
  } else {
    const found = await findNode(cfg.get<string>('nodePath'), d.nodeEnv);
    if (!found.ok) {
      d.output.error(found.message);
      void vscode.window.showErrorMessage(found.message, OPEN_SETTING).then((pick) => {
        if (pick === OPEN_SETTING)
          void vscode.commands.executeCommand('workbench.action.openSettings', 'rftStudio.nodePath');
      });
      return undefined;
    }
    d.output.info(`backend Node.js ${found.version} at ${found.path}`);
    // The server's own bundle when built (starts fastest), else the `rft` CLI (a checkout).
    const bundled = join(d.extensionPath, 'dist', 'backend', 'serve.mjs');
    const args = existsSync(bundled) ? [bundled] : [join(d.extensionPath, 'bin', 'rft.mjs'), 'serve'];
    if (workspace) args.push('--workspace', workspace);
    connector = childConnector({
      node: found.path,
      args,
      cwd: workspace ?? d.extensionPath,
      // Read at each (re)start: Restart Backend applies rftStudio.engine and logLevel as set now.
      // Runs started by a backend of a trusted workspace may load its workflow.file (workspace code).
      env: () => {
        const now = vscode.workspace.getConfiguration('rftStudio');
        return {
          RFT_LOG_LEVEL: now.get<string>('logLevel') ?? 'info',
          ...engineEnv(now.get<string>('engine')),
          ...(vscode.workspace.isTrusted ? { RFT_TRUST_WORKSPACE_CODE: '1' } : {}),
        };
      },
      onStderr: (l) => {
        if (!l.trim()) return;
        // Dawn's GPU-probe warnings (printed on CPU-only machines too) are its reason for no GPU, not errors.
        if (isDawnLine(l)) {
          d.output.warn(`[Dawn] ${l.trim()}`);
          d.onDawnLine?.(l);
        } else d.output.error(`[backend stderr] ${l}`);
      },
    });
  }
  const client = new BackendClient(connector, {
    clientVersion: d.version,
    workspace,
    log: d.output,
    onGiveUp: (exit) => {
      const last = exit.stderrTail.slice(-1)[0] ?? '';
      void vscode.window
        .showErrorMessage(`The RFT Studio backend keeps crashing and was not restarted. ${last}`, 'Show Log', 'Restart')
        .then((pick) => {
          if (pick === 'Show Log') d.output.show();
          if (pick === 'Restart') void client.restart().catch(() => undefined);
        });
    },
  });
  client.onNotification('log/line', (l) => {
    const line = `${l.scope}: ${l.msg}${l.fields && Object.keys(l.fields).length ? ' ' + JSON.stringify(l.fields) : ''}`;
    if (l.level === 'debug') d.output.debug(line);
    else d.output[l.level](line);
  });
  return client;
}

/**
 * rftStudio.engine as the backend's environment: every run, rollout process and model command it
 * starts inherits RFT_BACKEND. `auto` leaves the user's own RFT_BACKEND (or the engine's default order).
 */
export function engineEnv(setting: string | undefined): Record<string, string> {
  if (setting === 'webgpu') return { RFT_BACKEND: 'webgpu' };
  if (setting === 'cpu') return { RFT_BACKEND: 'wasm' };
  return {};
}
