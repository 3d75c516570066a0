// The training dashboard: live charts from `metrics` notifications, the state of each component,
// the run's config, checkpoints with an Evaluate button, stop / resume.
import type { ComponentState, MetricsPoint, RunInfo } from '../../backend/core/protocol.js';
import type { WebviewIpc } from '../shared/ipc.js';
import { h } from '../shared/dom.js';
import { LineChart } from './chart.js';
import { CHARTS, type DashboardNotifications, type DashboardRequests, type DashboardState } from './protocol.js';

type Ipc = WebviewIpc<DashboardRequests, DashboardNotifications>;

export interface DashboardApp {
  charts: LineChart[];
  state: DashboardState;
  show(runId: string): Promise<void>;
  firstPaint: Promise<void>;
}

export function mountDashboard(root: HTMLElement, ipc: Ipc, saved: DashboardState | undefined): DashboardApp {
  const doc = root.ownerDocument;
  const state: DashboardState = { ...(saved ?? {}) };
  let lastStep = -1;
  const header = h(doc, 'div', { class: 'toolbar' });
  const title = h(doc, 'h2', { text: 'No run selected' });
  const status = h(doc, 'span', { class: 'status', role: 'status' });
  const stop = h(doc, 'vscode-button', { id: 'stop', secondary: true, icon: 'debug-stop', text: 'Stop' });
  const resume = h(doc, 'vscode-button', { id: 'resume', secondary: true, icon: 'debug-continue', text: 'Resume' });
  const msg = h(doc, 'span', { class: 'message', role: 'alert' });
  header.append(title, status, stop, resume, msg);
  const components = h(doc, 'div', { class: 'components' });
  const grid = h(doc, 'div', { class: 'charts' });
  const charts = CHARTS.map((c) => {
    const canvas = h(doc, 'canvas', { 'aria-label': c.title }) as HTMLCanvasElement;
    grid.append(h(doc, 'figure', { class: 'chart' }, h(doc, 'figcaption', { text: `${c.title}${c.keys.length > 1 ? ` (${c.keys.join(', ')})` : ''}` }), canvas));
    return new LineChart(canvas, c.keys);
  });
  const checkpoints = h(doc, 'div', { class: 'checkpoints' });
  const config = h(doc, 'pre', { class: 'config' });
  root.append(header, components, grid, h(doc, 'h3', { text: 'Checkpoints' }), checkpoints, h(doc, 'h3', { text: 'Config' }), config);
  let paint!: () => void;
  const firstPaint = new Promise<void>((r) => (paint = r));

  const fail = (err: unknown) => {
    msg.textContent = (err as Error).message;
  };

  function renderComponents(cs: ComponentState[] | undefined): void {
    components.replaceChildren(
      ...(cs ?? []).map((c) =>
        h(doc, 'span', { class: `component st-${c.state}` }, h(doc, 'b', { text: c.name }), ` ${c.state}${c.idleFraction !== undefined ? ` · idle ${(100 * c.idleFraction).toFixed(0)}%` : ''}`),
      ),
    );
  }

  function renderRun(r: RunInfo & { components?: ComponentState[]; config?: unknown }): void {
    title.textContent = r.name ?? r.id;
    status.textContent = `${r.status}${r.step !== undefined ? ` · step ${r.step}${r.totalSteps ? `/${r.totalSteps}` : ''}` : ''}`;
    stop.toggleAttribute('disabled', r.status !== 'running');
    resume.toggleAttribute('disabled', !['paused', 'stopped', 'failed'].includes(r.status));
    renderComponents(r.components);
    if (r.config !== undefined) config.textContent = typeof r.config === 'string' ? r.config : JSON.stringify(r.config, null, 2);
    checkpoints.replaceChildren(
      ...(r.checkpoints ?? []).map((c) => {
        const b = h(doc, 'vscode-button', { secondary: true, icon: 'beaker', text: 'Evaluate' });
        const result = h(doc, 'span', { class: 'eval-result', role: 'status' });
        b.addEventListener('click', () => {
          b.toggleAttribute('disabled', true);
          result.textContent = 'evaluating…';
          void ipc
            .request('evaluate', { runId: r.id, checkpoint: c.path })
            .then((e) => (result.textContent = `accuracy ${(100 * e.accuracy).toFixed(1)}% on ${e.tasks} tasks`))
            .catch((err) => {
              result.textContent = '';
              fail(err);
            })
            .finally(() => b.toggleAttribute('disabled', false));
        });
        return h(doc, 'div', { class: 'checkpoint', 'data-version': String(c.version) }, h(doc, 'span', { text: `v${c.version}${c.step !== undefined ? ` (step ${c.step})` : ''} ` }), h(doc, 'code', { text: c.path }), b, result);
      }),
    );
  }

  function addPoint(m: MetricsPoint): void {
    if (m.runId !== state.runId || m.step <= lastStep) return;
    lastStep = m.step;
    for (const c of charts) c.add(m.step, m.values);
  }

  stop.addEventListener('click', () => state.runId && void ipc.request('stop', { runId: state.runId }).catch(fail));
  resume.addEventListener('click', () => state.runId && void ipc.request('resume', { runId: state.runId }).catch(fail));

  const app: DashboardApp = {
    charts,
    state,
    firstPaint,
    async show(runId) {
      state.runId = runId;
      ipc.api.setState(state);
      lastStep = -1;
      for (const c of charts) c.clear();
      msg.textContent = '';
      try {
        renderRun(await ipc.request('status', { runId }));
        for (const m of await ipc.request('metrics', { runId })) addPoint(m);
      } catch (err) {
        fail(err);
      }
      paint();
    },
  };
  ipc.on('select', ({ runId }) => void app.show(runId));
  ipc.on('metrics', addPoint);
  ipc.on('status', (r) => r.id === state.runId && renderRun(r));
  if (state.runId) void app.show(state.runId);
  else {
    for (const c of charts) c.draw();
    paint();
  }
  return app;
}
