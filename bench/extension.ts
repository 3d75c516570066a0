// `npm run bench -- extension`: activation time of the extension and first paint of each webview.
// - activation: src/extension.ts activated against the fake VS Code API of the unit tests, with the
//   real bundled backend (dist/backend/serve.mjs) on a real SQLite buffer of 10,000 experiences:
//   activate() returning, the backend answering, and the sidebar showing the buffer counts.
// - first paint: the bundled webview (dist/webview/NAME.js) in Debian's chromium through
//   playwright-core, inside the same CSP shell the extension serves, with a stand-in host that answers
//   the webview's requests (experience browser: a 100,000-row buffer; dashboard: 2,000 metric points).
// Run `npm run build` first. Median of 5 runs each.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { median, report } from './report.js';
import { shellHtml } from '../src/webviews/html.js';

const ROOT = new URL('..', import.meta.url).pathname;
const RUNS = 5;
for (const f of ['dist/backend/serve.mjs', 'dist/webview/experience-browser.js', 'dist/webview/dashboard.js']) {
  if (!existsSync(join(ROOT, f))) {
    console.error(`${f} is missing: run npm run build first`);
    process.exit(1);
  }
}

// ---------------------------------------------------------------- activation
async function activation(): Promise<void> {
  const { ext, fakeContext, until, vscode, workspaceDir } = await import('../tools/fake-vscode/harness.js');
  const { makeBuffer } = await import('../tools/make-buffer.js');
  // The backend opens buffers inside the workspace only: one workspace holds the buffer for all runs.
  const ws = workspaceDir({ 'tasksets/math.jsonl': '{"id":"a","prompt":"1+1?","answer":"2"}\n' });
  mkdirSync(join(ws, '.rft', 'bench'), { recursive: true });
  const buffer = await makeBuffer(10_000, join(ws, '.rft', 'bench'));
  const activate: number[] = [];
  const ready: number[] = [];
  const counts: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    vscode.resetFake();
    vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(ws), name: 'ws', index: 0 }];
    vscode.settings.set('rftStudio.nodePath', process.execPath);
    vscode.settings.set('rftStudio.bufferPath', buffer);
    const ctx = fakeContext(ROOT);
    const t0 = performance.now();
    const api = await ext.activate(ctx as never);
    activate.push(performance.now() - t0);
    await until(() => api.services?.client.state === 'running', 'backend running');
    ready.push(performance.now() - t0);
    const view = vscode.recorded.treeViews.get('rftStudio.buffer')!;
    await until(async () => (await view.items()).some((it) => it.description === '10,000'), 'buffer counts');
    counts.push(performance.now() - t0);
    await ext.deactivate();
    for (const d of ctx.subscriptions) d.dispose();
  }
  report({ bench: 'extension', figure: 'activate_call', unit: 'ms', value: median(activate), runs: RUNS });
  report({ bench: 'extension', figure: 'activate_to_backend_ready', unit: 'ms', value: median(ready), runs: RUNS });
  report({
    bench: 'extension',
    figure: 'activate_to_sidebar_counts',
    unit: 'ms',
    value: median(counts),
    buffer_rows: 10_000,
    runs: RUNS,
  });
}

// ---------------------------------------------------------------- webview first paint
const HOST_SHIM = (kind: string) => `
(() => {
  const KIND = ${JSON.stringify(kind)};
  const TOTAL = 100000;
  const row = (i) => ({ id: 'e' + i, taskId: 't' + (i % 50), groupId: 'g' + (i >> 3), runId: 'r', source: i % 97 ? 'usual' : 'expert', status: i % 31 ? 'ok' : 'infra_failure',
    reward: (i % 100) / 100, modelVersion: i % 7, createdAt: i, promptPreview: 'prompt ' + i, responsePreview: 'a response of some length for row ' + i, responseTokens: 40 });
  const answer = (m) => {
    const p = m.params;
    if (KIND === 'experience-browser') {
      if (m.method === 'list') return { total: TOTAL, rows: Array.from({ length: Math.min(p.limit, TOTAL - p.offset) }, (_, k) => row(p.offset + k)) };
      return null;
    }
    if (m.method === 'status') return { id: 'r1', status: 'running', step: 2000, totalSteps: 4000, components: [{ name: 'explorer', state: 'generating', idleFraction: 0.1 }, { name: 'trainer', state: 'training', idleFraction: 0.3 }], config: { algorithm: 'mix' } };
    if (m.method === 'metrics') return Array.from({ length: 2000 }, (_, s) => ({ runId: 'r1', step: s, at: s, values: { reward: Math.tanh(s / 500), kl: 0.01 * Math.sqrt(s), entropy: 2 - s / 2000, 'loss/total': 1 / (1 + s / 100), tokens_per_s: 900 + (s % 50), 'idle/explorer': 0.1, 'idle/trainer': 0.3, eval_accuracy: s / 4000 } }));
    return null;
  };
  window.acquireVsCodeApi = () => ({
    getState: () => undefined,
    setState: () => undefined,
    postMessage: (m) => {
      if (m.kind === 'ready' && KIND === 'experience-browser') setTimeout(() => window.postMessage({ kind: 'notification', method: 'bufferChanged', params: { path: '/bench.db', counts: { usual: TOTAL, expert: 0, taskset: 50, rejected: 0, infraFailure: 0 } } }, '*'));
      if (m.kind === 'ready' && KIND === 'dashboard') setTimeout(() => window.postMessage({ kind: 'notification', method: 'select', params: { runId: 'r1' } }, '*'));
      if (m.kind === 'request') setTimeout(() => window.postMessage({ kind: 'response', id: m.id, result: answer(m) }, '*'));
    },
  });
})();`;

async function firstPaint(): Promise<void> {
  const browser = await chromium.launch({
    executablePath: process.env.RFT_E2E_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    for (const name of ['experience-browser', 'dashboard']) {
      const times: number[] = [];
      const frames: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
        await page.addInitScript(HOST_SHIM(name));
        const origin = 'https://webview.bench';
        await page.route(`${origin}/**`, (route) => {
          const path = new URL(route.request().url()).pathname;
          if (path === '/') {
            const html = shellHtml({
              cspSource: origin,
              nonce: 'benchnonce' + i,
              title: name,
              scriptUri: `${origin}/${name}.js`,
              codiconCssUri: `${origin}/codicons/codicon.css`,
              styleUri: `${origin}/${name}.css`,
            });
            return route.fulfill({ contentType: 'text/html', body: html });
          }
          const file = join(ROOT, 'dist/webview', path);
          if (!existsSync(file)) return route.fulfill({ status: 404 });
          const type = path.endsWith('.js') ? 'text/javascript' : path.endsWith('.css') ? 'text/css' : 'font/ttf';
          return route.fulfill({ contentType: type, body: readFileSync(file) });
        });
        await page.goto(`${origin}/`);
        const attr = await page.waitForFunction(() => document.body.getAttribute('data-first-paint'), undefined, {
          timeout: 30_000,
        });
        // data-first-paint is performance.now() (ms since navigation start) when the first data row / chart was drawn.
        times.push(Number(await attr.jsonValue()));
        if (name === 'experience-browser') {
          // Scroll through the 100k list in 40 jumps; the time to the next frame with rows drawn.
          frames.push(
            await page.evaluate(async () => {
              const list = document.querySelector('.list') as HTMLElement;
              const per: number[] = [];
              for (let k = 1; k <= 40; k++) {
                const t = performance.now();
                list.scrollTop = (list.scrollHeight * k) / 41;
                await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
                per.push(performance.now() - t);
              }
              per.sort((a, b) => a - b);
              return per[Math.floor(per.length * 0.95) - 1]!;
            }),
          );
        }
        await page.close();
      }
      report({
        bench: 'extension',
        figure: `first_paint_${name.replace('-', '_')}`,
        unit: 'ms',
        value: median(times),
        runs: RUNS,
        ...(name === 'experience-browser' ? { rows: 100_000 } : { metric_points: 2000 }),
      });
      if (frames.length)
        report({
          bench: 'extension',
          figure: 'experience_browser_scroll_p95_two_frames',
          unit: 'ms',
          value: median(frames),
          rows: 100_000,
          runs: RUNS,
        });
    }
  } finally {
    await browser.close();
  }
}

await activation();
await firstPaint();
process.exit(0);
