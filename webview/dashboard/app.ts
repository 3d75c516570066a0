// The training dashboard: live charts from `metrics` notifications, the state of each component,
// the run's config, checkpoints with an Evaluate button, stop / resume.
import type { ComponentState, MetricsPoint, RunInfo } from '../../backend/core/protocol.js';
import type { WebviewIpc } from '../shared/ipc.js';
import { h } from '../shared/dom.js';
import type { LineChart } from './chart.js';
import type { DashboardNotifications, DashboardRequests, DashboardState } from './protocol.js';
import { chartGrid } from './chart-grid.js';
import { renderCheckpoints, type CheckpointContext } from './checkpoint-list.js';
import { renderComponents, renderEngines } from './run-parts.js';

type Ipc = WebviewIpc<DashboardRequests, DashboardNotifications>;

/** How often the shown run's status (checkpoints, components) is re-read while it runs. */
const REFRESH_MS = 10_000;

export interface DashboardApp {
  charts: LineChart[];
  state: DashboardState;
  show(runId: string): Promise<void>;
  firstPaint: Promise<void>;
}

export function mountDashboard(root: HTMLElement, ipc: Ipc, saved: DashboardState | undefined): DashboardApp {
  const doc = root.ownerDocument;
  const state: DashboardState = { ...(saved ?? {}) };
  /** Runs this dashboard has heard of: a run first heard of while running is a new one. */
  const heard = new Set<string>();
  /** Bumped by every show(): answers for a run no longer shown are dropped. */
  let generation = 0;
  /** Evaluation results per checkpoint path of the shown run (kept across re-renders). */
  const evals = new Map<string, string>();
  /** `stopping…` / `pausing…` from the click until the run's status leaves running (it ends its step first). */
  let ending: string | undefined;
  const header = h(doc, 'div', { class: 'toolbar' });
  const title = h(doc, 'h2', { text: 'No run selected' });
  const status = h(doc, 'span', { class: 'status', role: 'status' });
  const stop = h(doc, 'vscode-button', { id: 'stop', secondary: true, icon: 'debug-stop', text: 'Stop' });
  const pause = h(doc, 'vscode-button', { id: 'pause', secondary: true, icon: 'debug-pause', text: 'Pause' });
  const resume = h(doc, 'vscode-button', { id: 'resume', secondary: true, icon: 'debug-continue', text: 'Resume' });
  const msg = h(doc, 'span', { class: 'message', role: 'alert' });
  header.append(title, status, stop, pause, resume, msg);
  // Why a run failed (or stopped): the registry's statusReason, shown until the run runs again.
  const reason = h(doc, 'div', { class: 'reason', role: 'alert', hidden: true });
  // What the run warned of (a policy collapse: KL, reward, entropy and the likely cause), from its metrics points.
  const warnings = h(doc, 'div', { class: 'warnings', role: 'alert', hidden: true });
  const warned = new Set<string>();
  const components = h(doc, 'div', { class: 'components' });
  // What the run computes on: its tensor engine and what samples its rollouts (status answers carry it).
  const engines = h(doc, 'div', { class: 'engines', hidden: true });
  const grid = h(doc, 'div', { class: 'charts' });
  const charts = chartGrid(doc, grid);
  const checkpoints = h(doc, 'div', { class: 'checkpoints' });
  const config = h(doc, 'pre', { class: 'config' });
  root.append(
    header,
    reason,
    warnings,
    engines,
    components,
    grid,
    h(doc, 'h3', { text: 'Checkpoints' }),
    checkpoints,
    h(doc, 'h3', { text: 'Config' }),
    config,
  );
  const checkpointCtx: CheckpointContext = {
    doc,
    ipc,
    checkpoints,
    evals,
    generation: () => generation,
    fail: (err) => fail(err),
  };
  let paint!: () => void;
  const firstPaint = new Promise<void>((r) => (paint = r));

  const fail = (err: unknown) => {
    msg.textContent = (err as Error).message;
  };

  /** The shown run as last rendered; its step advances with live points (the registry lags). */
  let shown: RunInfo | undefined;
  function renderStatus(): void {
    const r = shown;
    if (!r) return;
    status.textContent = `${ending && r.status === 'running' ? ending : r.status}${r.step !== undefined ? ` · step ${r.step}${r.totalSteps ? `/${r.totalSteps}` : ''}` : ''}`;
  }

  function renderRun(r: RunInfo & { components?: ComponentState[]; config?: unknown }): void {
    title.textContent = r.name ?? r.id;
    // A status answer older than the live points does not move the step back.
    const live =
      shown?.id === r.id && r.status === 'running' && (shown.step ?? -1) > (r.step ?? -1) ? shown.step : r.step;
    shown = { ...r, step: live };
    renderStatus();
    // A stop or pause asked for keeps its `stopping…` until the run leaves running.
    if (r.status !== 'running') ending = undefined;
    stop.toggleAttribute('disabled', r.status !== 'running' || !!ending);
    pause.toggleAttribute('disabled', r.status !== 'running' || !!ending);
    resume.toggleAttribute('disabled', !['paused', 'stopped', 'failed'].includes(r.status));
    const why = r.status === 'failed' || r.status === 'stopped' ? r.statusReason : undefined;
    reason.hidden = !why;
    reason.textContent = why ? `${r.status === 'failed' ? 'Failed' : 'Stopped'}: ${why}` : '';
    reason.className = `reason${r.status === 'failed' ? ' error' : ''}`;
    // Status notifications carry no component states nor engines: keep the last ones read.
    if (r.components) renderComponents(doc, components, r.components);
    if (r.engines) renderEngines(doc, engines, r.engines);
    // The host sends the config as YAML text (status answers only; notifications carry none).
    if (typeof r.config === 'string') config.textContent = r.config;
    renderCheckpoints(checkpointCtx, r);
  }

  /** Live points replace a repeated step (a resumed run re-does steps); history fills gaps only. */
  function addPoint(m: MetricsPoint, fromHistory = false): void {
    if (m.runId !== state.runId) return;
    for (const w of m.warnings ?? []) {
      const key = `${w.code}:${w.stage ?? ''}:${w.step}`;
      if (warned.has(key)) continue;
      warned.add(key);
      warnings.append(h(doc, 'div', { class: `warning code-${w.code}`, text: `Step ${w.step}: ${w.message}` }));
      warnings.hidden = false;
    }
    for (const c of charts) {
      c.runHasData = true;
      c.add(m.step, m.values, !fromHistory);
    }
    // Steps done = the trainer steps a train point says are done (its model version), as the Runs
    // view counts them; an explore or eval point's step is no count of steps done.
    const done = m.trained;
    if (
      !fromHistory &&
      done !== undefined &&
      shown?.id === m.runId &&
      shown.status === 'running' &&
      done > (shown.step ?? -1)
    ) {
      shown = { ...shown, step: done };
      renderStatus();
    }
  }

  const end = (how: 'stop' | 'pause') => {
    if (!state.runId) return;
    ending = how === 'stop' ? 'stopping…' : 'pausing…';
    stop.toggleAttribute('disabled', true);
    pause.toggleAttribute('disabled', true);
    renderStatus();
    void ipc.request(how, { runId: state.runId }).catch((err) => {
      ending = undefined;
      renderStatus();
      fail(err);
    });
  };
  stop.addEventListener('click', () => end('stop'));
  pause.addEventListener('click', () => end('pause'));
  resume.addEventListener('click', () => state.runId && void ipc.request('resume', { runId: state.runId }).catch(fail));

  const app: DashboardApp = {
    charts,
    state,
    firstPaint,
    async show(runId) {
      const gen = ++generation;
      if (runId !== state.runId) ending = undefined;
      state.runId = runId;
      ipc.api.setState(state);
      heard.add(runId);
      shown = undefined;
      evals.clear();
      for (const c of charts) c.clear();
      msg.textContent = '';
      reason.hidden = true;
      warnings.replaceChildren();
      warnings.hidden = true;
      warned.clear();
      renderEngines(doc, engines, undefined);
      // Live points that arrive while the history loads are kept (addPoint merges by step): the
      // subscription is already there, and the history fills in the steps before them.
      try {
        const r = await ipc.request('status', { runId });
        if (gen !== generation) return;
        shownStatus = r.status;
        renderRun(r);
        const history = await ipc.request('metrics', { runId });
        if (gen !== generation) return;
        for (const m of history) addPoint(m, true);
        // A running run has done at least the steps its history holds (the registry lags).
        const done = history.reduce((n, p) => Math.max(n, p.trained ?? 0), 0);
        const cur = shown as RunInfo | undefined; // set by renderRun above (TS cannot see through the call)
        if (done > 0 && cur?.id === runId && cur.status === 'running' && done > (cur.step ?? -1)) {
          shown = { ...cur, step: done };
          renderStatus();
        }
      } catch (err) {
        if (gen === generation) fail(err);
      }
      paint();
    },
  };
  ipc.on('select', ({ runId }) => void app.show(runId));
  ipc.on('metrics', (m) => addPoint(m));
  let shownStatus: string | undefined;
  ipc.on('status', (r) => {
    const isNew = !heard.has(r.id);
    heard.add(r.id);
    if (r.id !== state.runId) {
      // A run that starts while the shown one is over (or none is shown) takes the dashboard.
      if (isNew && r.status === 'running' && shownStatus !== 'running') void app.show(r.id);
      return;
    }
    shownStatus = r.status;
    renderRun(r);
  });
  // The checkpoint list and component states must not go stale between notifications.
  const win = doc.defaultView;
  win?.setInterval(() => {
    if (!state.runId || shownStatus !== 'running') return;
    const gen = generation;
    void ipc.request('status', { runId: state.runId }).then(
      (r) => gen === generation && renderRun(r),
      () => undefined,
    );
  }, REFRESH_MS);
  if (state.runId) void app.show(state.runId);
  else {
    for (const c of charts) c.draw();
    paint();
  }
  return app;
}
