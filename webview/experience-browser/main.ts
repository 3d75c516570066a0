// Entry of the experience browser webview (bundled to dist/webview/experience-browser.js).
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-checkbox/index.js';
import '@vscode-elements/elements/dist/vscode-option/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import '@vscode-elements/elements/dist/vscode-textarea/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import { WebviewIpc } from '../shared/ipc.js';
import { mountBrowser } from './app.js';
import type { BrowserNotifications, BrowserRequests, BrowserState } from './protocol.js';

const api = acquireVsCodeApi();
const ipc = new WebviewIpc<BrowserRequests, BrowserNotifications>(api, window);
const app = mountBrowser(document.getElementById('app')!, ipc, api.getState() as BrowserState | undefined);
ipc.ready();
void app.firstPaint.then(() => document.body.setAttribute('data-first-paint', String(Math.round(performance.now()))));
