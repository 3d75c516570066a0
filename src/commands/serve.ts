// Serve Policy for an Agent… (issue 43 item 7): starts a `mode: serve` run from a config or a model
// (a config that is not a serve one is written as one under a new name; the user's file is never
// changed), waits until the run serves, and shows its base URL with Copy Base URL / Copy Token. The
// endpoint comes from the backend (`serve/info`: the run's serve.json), never from the log's text.
import * as vscode from 'vscode';
import { dirname } from 'node:path';
import type { RunInfo, ServeInfo } from '../../backend/core/protocol.js';
import type { Services } from '../services.js';
import { showBackendError } from '../errors.js';
import { requireTrust } from '../trust.js';
import { configTemplate, domainOf, templateRunName } from '../templates.js';
import { pickTemplateModel } from '../models/model-pick.js';
import { modelLines, trainerLines } from '../models/model-card.js';
import { takenRunNames } from './run-names.js';
import { runIdArg } from './run-from-arg.js';
import { CONFIG_GLOB, startTraining, templateFiles } from './training.js';
import { unusedUri, splitName } from './unused-name.js';
import { toServeConfig } from './serve-config.js';

export const COPY_URL = 'Copy Base URL';
export const COPY_TOKEN = 'Copy Token';
/** How often the command looks whether the run serves yet. */
const POLL_MS = 300;

/** A serve config to start: the picked one if it is one, else its serve form written beside it. */
async function serveConfigFrom(s: Services, uri: vscode.Uri): Promise<vscode.Uri> {
  const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
  const rel = vscode.workspace.asRelativePath(uri);
  const out = toServeConfig(text, rel);
  if (out.already) return uri;
  const [stem] = splitName(uri.path.split('/').pop()!);
  const target = await unusedUri(vscode.Uri.file(dirname(uri.fsPath)), `${stem}-serve.rft.yaml`);
  await vscode.workspace.fs.writeFile(target, new TextEncoder().encode(out.text));
  s.output.info(
    `Wrote ${vscode.workspace.asRelativePath(target)}: ${rel} in mode serve${out.dropped.length ? ` (taken out: ${out.dropped.join(', ')})` : ''}.`,
  );
  return target;
}

/** A config from the workspace, or one written for a model (through the template, then in serve form). */
async function pickServeConfig(s: Services): Promise<vscode.Uri | undefined> {
  const configs = await vscode.workspace.findFiles(CONFIG_GLOB, '**/node_modules/**', 100);
  const MODEL = '$(server) Serve a model… (writes a serve config)';
  const pick = await vscode.window.showQuickPick([...configs.map((u) => vscode.workspace.asRelativePath(u)), MODEL], {
    title: 'Serve Policy for an Agent: config or model',
    ignoreFocusOut: true,
  });
  if (!pick) return undefined;
  if (pick !== MODEL) {
    const uri = configs.find((u) => vscode.workspace.asRelativePath(u) === pick);
    return uri && serveConfigFrom(s, uri);
  }
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) return undefined;
  const model = await pickTemplateModel(s, folder.uri.fsPath);
  if (!model) return undefined;
  const { ts, files } = await templateFiles(s);
  const name = templateRunName(ts, 'preset' in model ? model.preset : model.name, await takenRunNames(s.state.runs));
  const train = configTemplate(ts, domainOf(ts), modelLines(model), files, trainerLines(model), name);
  const out = toServeConfig(train, 'the training template');
  const uri = await unusedUri(folder.uri, `${name}-serve.rft.yaml`);
  await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(out.text));
  s.output.info(`Wrote ${vscode.workspace.asRelativePath(uri)} (mode serve) for ${name}.`);
  return uri;
}

/** Waits until run ID serves (its serve.json is there), or says why it will not (it failed or ended). */
async function whenServing(s: Services, id: string, token: vscode.CancellationToken): Promise<ServeInfo | undefined> {
  for (;;) {
    const info = await s.client.request('serve/info', { runId: id });
    if (info) return info;
    await s.state.refreshRuns();
    const run = s.state.runs.find((r) => r.id === id);
    if (run && ['failed', 'stopped', 'completed'].includes(run.status)) {
      void vscode.window.showErrorMessage(
        `Run ${id} ${run.status} before it served${run.statusReason ? `: ${run.statusReason}` : ''}.`,
      );
      return undefined;
    }
    if (token.isCancellationRequested) return undefined;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Offers the endpoint: its base URL in the message, Copy Base URL / Copy Token. */
export async function showServing(s: Services, info: ServeInfo): Promise<void> {
  const line = `Run ${info.runId} serves at ${info.baseUrl} (bearer token in ${info.tokenFile}).`;
  s.output.info(line);
  const pick = await vscode.window.showInformationMessage(line, COPY_URL, COPY_TOKEN);
  if (pick === COPY_URL) await copyServe(s, info.runId, 'url');
  else if (pick === COPY_TOKEN) await copyServe(s, info.runId, 'token');
}

export async function servePolicy(s: Services, arg?: vscode.Uri): Promise<ServeInfo | undefined> {
  if (!requireTrust('Serving a policy')) return undefined;
  let uri: vscode.Uri | undefined;
  try {
    uri = arg ? await serveConfigFrom(s, arg) : await pickServeConfig(s);
  } catch (e) {
    void vscode.window.showErrorMessage(`Serve Policy for an Agent: ${(e as Error).message}`);
    return undefined;
  }
  if (!uri) return undefined;
  const id = await startTraining(s, uri);
  if (!id) return undefined;
  const info = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Waiting for run ${id} to serve…`, cancellable: true },
    (_p, token) => whenServing(s, id, token),
  );
  if (info) void showServing(s, info);
  return info;
}

/** Copy Base URL / Copy Token of a serve run (the Runs view's item, an id, or picked among the running ones). */
export async function copyServe(s: Services, arg: unknown, what: 'url' | 'token'): Promise<string | undefined> {
  let id = runIdArg(arg);
  if (id === undefined) {
    const running = s.state.runs.filter((r: RunInfo) => r.status === 'running');
    const serving: ServeInfo[] = [];
    for (const r of running) {
      const info = await s.client.request('serve/info', { runId: r.id }).catch(() => null);
      if (info) serving.push(info);
    }
    if (!serving.length) {
      void vscode.window.showInformationMessage('No run is serving. Start one with Serve Policy for an Agent….');
      return undefined;
    }
    const pick =
      serving.length === 1
        ? serving[0]
        : await vscode.window
            .showQuickPick(
              serving.map((i) => ({ label: i.runId, description: i.baseUrl, info: i })),
              { title: 'Serve run' },
            )
            .then((p) => p?.info);
    id = pick?.runId;
  }
  if (id === undefined) return undefined;
  try {
    const info = await s.client.request('serve/info', { runId: id });
    if (!info) {
      void vscode.window.showInformationMessage(`Run ${id} is not serving (not a serve run, or not started yet).`);
      return undefined;
    }
    const text = what === 'url' ? info.baseUrl : info.token;
    await vscode.env.clipboard.writeText(text);
    void vscode.window.showInformationMessage(
      what === 'url' ? `Copied ${info.baseUrl}.` : `Copied the bearer token of run ${id} (from ${info.tokenFile}).`,
    );
    return text;
  } catch (e) {
    await showBackendError(what === 'url' ? COPY_URL : COPY_TOKEN, e, s.output);
    return undefined;
  }
}
