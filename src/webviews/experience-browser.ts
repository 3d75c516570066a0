// Host side of the experience browser: answers the webview's typed requests through the backend
// (every curation action goes into the buffer) and forwards buffer changes.

import type * as vscode from 'vscode';
import type { BrowserNotifications, BrowserRequests, ServingRun } from '../../webview/experience-browser/protocol.js';
import type { ExperienceFilter } from '../../backend/core/protocol.js';
import type { Services } from '../services.js';
import { TypedPanel, type Handlers } from './panel.js';

export interface BrowserOpenOptions {
  source?: 'usual' | 'expert';
  /** Only this task's experiences (from the taskset CodeLens). */
  taskId?: string;
}

let current: TypedPanel<BrowserRequests, BrowserNotifications> | undefined;

export function browserHandlers(s: Services): Handlers<BrowserRequests> {
  const buffer = () => {
    if (!s.state.bufferPath) throw new Error('no buffer is open: run "RFT Studio: Open Buffer" first');
    return { path: s.state.bufferPath };
  };
  return {
    list: async (p) => {
      const r = await s.client.request('buffer/list', { buffer: buffer(), ...p });
      const hint = r.total === 0 && p.filter.runId ? runElsewhere(s, p.filter.runId) : undefined;
      return hint ? { ...r, hint } : r;
    },
    get: async (p) => s.client.request('buffer/get', { buffer: buffer(), id: p.id }),
    group: async (p) => s.client.request('buffer/group', { buffer: buffer(), groupId: p.groupId }),
    promote: async (p) => s.client.request('feedback/promote', { buffer: buffer(), ...p }),
    reject: async (p) => s.client.request('feedback/reject', { buffer: buffer(), id: p.id }),
    rate: async (p) => s.client.request('feedback/rate', { buffer: buffer(), ...p }),
    bulkPromote: async (p) => s.client.request('feedback/bulkPromote', { buffer: buffer(), ...p }),
    bulkPreview: async (p) => s.client.request('feedback/bulkPreview', { buffer: buffer(), ...p }),
    undo: async (p) => s.client.request('feedback/undo', { buffer: buffer(), ...p }),
    served: async () => ({ runs: await servingRuns(s) }),
    rateEpisode: async (p) => s.client.request('serve/reward', p),
  };
}

/** The running runs that serve (mode serve), each with the episodes it waits to be rewarded for. */
async function servingRuns(s: Services): Promise<ServingRun[]> {
  await s.state.refreshRuns();
  const out: ServingRun[] = [];
  for (const r of s.state.runs.filter((x) => x.status === 'running')) {
    const info = await s.client.request('serve/info', { runId: r.id }).catch(() => null);
    if (!info) continue;
    const base = { runId: r.id, ...(r.name ? { name: r.name } : {}), baseUrl: info.baseUrl };
    try {
      out.push({ ...base, episodes: (await s.client.request('serve/episodes', { runId: r.id })).episodes });
    } catch (e) {
      out.push({ ...base, episodes: [], error: (e as Error).message });
    }
  }
  return out;
}

/**
 * Why a filter on `runId` finds nothing in the open buffer: the run keeps its experiences in its own
 * buffer (each run of a workspace has one), or no run of the workspace has that id.
 */
export function runElsewhere(s: Pick<Services, 'state'>, runId: string): string | undefined {
  const id = runId.trim();
  const run = s.state.runs.find((r) => r.id === id);
  if (!run)
    return s.state.runs.length ? `No run of this workspace has the id '${id}' (the Runs view lists them).` : undefined;
  if (!run.bufferPath || run.bufferPath === s.state.bufferPath) return undefined;
  return `Run ${run.name ?? run.id} (${run.id}) keeps its experiences in its own buffer, ${run.bufferPath}: open it with "RFT Studio: Open Buffer" and pick the run.`;
}

export async function openExperienceBrowser(
  s: Services,
  opts: BrowserOpenOptions = {},
  restored?: vscode.WebviewPanel,
): Promise<TypedPanel<BrowserRequests, BrowserNotifications>> {
  const filter: ExperienceFilter | undefined =
    opts.source || opts.taskId
      ? { ...(opts.source ? { source: opts.source } : {}), ...(opts.taskId ? { taskId: opts.taskId } : {}) }
      : undefined;
  if (current && !restored) {
    current.panel.reveal();
    if (filter) current.notify('setFilter', { filter });
    return current;
  }
  current?.dispose();
  const p = new TypedPanel<BrowserRequests, BrowserNotifications>(
    s.context.extensionUri,
    'rftStudio.experienceBrowser',
    'Experiences',
    'experience-browser',
    browserHandlers(s),
    undefined,
    restored,
  );
  current = p;
  const sub = s.state.onDidChange(
    (what) => what === 'buffer' && p.notify('bufferChanged', { path: s.state.bufferPath, counts: s.state.counts }),
  );
  p.onDispose = () => {
    sub.dispose();
    if (current === p) current = undefined;
  };
  // Every (re)load of the webview is told the open buffer at once; the opening filter only the first time.
  p.onReady = () => p.notify('bufferChanged', { path: s.state.bufferPath, counts: s.state.counts });
  void p.ready.then(() => filter && p.notify('setFilter', { filter }));
  return p;
}
