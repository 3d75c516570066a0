// Entry of the training dashboard webview (bundled to dist/webview/dashboard.js).
import '@vscode-elements/elements/dist/vscode-button/index.js';
import { WebviewIpc } from '../shared/ipc.js';
import { mountDashboard } from './app.js';
import type { DashboardNotifications, DashboardRequests, DashboardState } from './protocol.js';

const api = acquireVsCodeApi();
const ipc = new WebviewIpc<DashboardRequests, DashboardNotifications>(api, window);
const app = mountDashboard(document.getElementById('app')!, ipc, api.getState() as DashboardState | undefined);
ipc.ready();
void app.firstPaint.then(() => document.body.setAttribute('data-first-paint', String(Math.round(performance.now()))));
