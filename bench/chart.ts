// `npm run bench -- chart [POINTS...]`: the dashboard's hand-written canvas chart
// (webview/dashboard/chart.ts) against uPlot 1.6 on the same data, in Debian's chromium through
// playwright-core: 7 charts (the dashboard's keys; 3 series on Losses, 2 on Idle) of 640x200 px.
// - first draw: build the 7 charts and draw POINTS points each (canvas work included);
// - append: one new step to every chart and the 7 redraws (the live case), median of 200.
// uPlot draws in a microtask after setData; both sides are timed until the draw has happened.
// Default POINTS: 2000 (a long run at one point per step) and 20000.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { median, report } from './report.js';

const ROOT = new URL('..', import.meta.url).pathname;
const SIZES = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const POINTS = SIZES.length ? SIZES : [2000, 20000];
const RUNS = 7;

const ours = (
  await build({
    entryPoints: [join(ROOT, 'webview/dashboard/chart.ts')],
    bundle: true,
    format: 'iife',
    globalName: 'RftChart',
    write: false,
    logLevel: 'error',
  })
).outputFiles[0]!.text;
const uplot = readFileSync(join(ROOT, 'node_modules/uplot/dist/uPlot.iife.min.js'), 'utf8');
const uplotCss = readFileSync(join(ROOT, 'node_modules/uplot/dist/uPlot.min.css'), 'utf8');

// Runs in the page: returns { first, append } in ms for one library and one size.
const PAGE_BENCH = async ([lib, n]: [string, number]) => {
  const KEYS = [
    ['reward'],
    ['eval_accuracy'],
    ['loss/total', 'loss/policy', 'loss/sft'],
    ['kl'],
    ['entropy'],
    ['tokens_per_s'],
    ['idle/explorer', 'idle/trainer'],
  ];
  const val = (k: string, s: number) =>
    k.startsWith('loss')
      ? 1 / (1 + s / 100)
      : k === 'kl'
        ? 0.01 * Math.sqrt(s)
        : k === 'tokens_per_s'
          ? 900 + (s % 50)
          : Math.tanh(s / 500) + 0.01 * Math.sin(s);
  const host = document.getElementById('host')!;
  host.replaceChildren();
  const w = window as unknown as {
    RftChart: {
      LineChart: new (
        c: HTMLCanvasElement,
        keys: string[],
        o: object,
      ) => { add(s: number, v: Record<string, number>): void; draw(): void };
    };
    uPlot: new (o: object, d: number[][], el: HTMLElement) => { setData(d: number[][]): void; hooks?: unknown };
  };
  const raf = () => new Promise((r) => requestAnimationFrame(() => r(undefined)));
  if (lib === 'ours') {
    const t0 = performance.now();
    const charts = KEYS.map((keys) => {
      const c = document.createElement('canvas');
      c.style.width = '640px';
      c.style.height = '200px';
      host.append(c);
      const ch = new w.RftChart.LineChart(c, keys, { xTitle: 'step', yTitle: 'y' });
      for (let s = 0; s < n; s++) ch.add(s, Object.fromEntries(keys.map((k) => [k, val(k, s)])));
      ch.draw();
      return { ch, keys };
    });
    const first = performance.now() - t0;
    await raf();
    const per: number[] = [];
    for (let i = 0; i < 200; i++) {
      const s = n + i;
      const t = performance.now();
      for (const { ch, keys } of charts) {
        ch.add(s, Object.fromEntries(keys.map((k) => [k, val(k, s)])));
        ch.draw();
      }
      per.push(performance.now() - t);
    }
    per.sort((a, b) => a - b);
    return { first, append: per[100]! };
  }
  let drawn = 0;
  const t0 = performance.now();
  const charts = KEYS.map((keys) => {
    const el = document.createElement('div');
    host.append(el);
    const data: number[][] = [
      Array.from({ length: n }, (_, s) => s),
      ...keys.map((k) => Array.from({ length: n }, (_, s) => val(k, s))),
    ];
    const u = new w.uPlot(
      {
        width: 640,
        height: 200,
        scales: { x: { time: false } },
        axes: [{ label: 'step' }, { label: 'y' }],
        series: [{}, ...keys.map((k, j) => ({ label: k, stroke: ['#3794ff', '#d18616', '#89d185'][j] }))],
        hooks: { draw: [() => drawn++] },
      },
      data,
      el,
    );
    return { u, data, keys };
  });
  while (drawn < charts.length) await Promise.resolve();
  const first = performance.now() - t0;
  await raf();
  const per: number[] = [];
  for (let i = 0; i < 200; i++) {
    const s = n + i;
    const want = drawn + charts.length;
    const t = performance.now();
    for (const c of charts) {
      c.data[0]!.push(s);
      c.keys.forEach((k, j) => c.data[j + 1]!.push(val(k, s)));
      c.u.setData(c.data);
    }
    while (drawn < want) await Promise.resolve();
    per.push(performance.now() - t);
  }
  per.sort((a, b) => a - b);
  return { first, append: per[100]! };
};

const browser = await chromium.launch({
  executablePath: process.env.RFT_E2E_CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1800 } });
  await page.setContent(
    `<!doctype html><html><head><style>${uplotCss}</style></head><body><div id="host"></div></body></html>`,
  );
  // tsx keeps function names with a __name helper the serialised page function refers to.
  await page.addScriptTag({ content: 'window.__name = (f) => f;' });
  await page.addScriptTag({ content: ours });
  await page.addScriptTag({ content: uplot });
  for (const n of POINTS) {
    const res: Record<string, { first: number[]; append: number[] }> = {
      ours: { first: [], append: [] },
      uplot: { first: [], append: [] },
    };
    for (let r = 0; r < RUNS; r++) {
      // Alternate which goes first, so neither always pays the page's cold start (fonts, JIT).
      for (const lib of r % 2 ? (['uplot', 'ours'] as const) : (['ours', 'uplot'] as const)) {
        const x = await page.evaluate(PAGE_BENCH, [lib, n] as [string, number]);
        res[lib]!.first.push(x.first);
        res[lib]!.append.push(x.append);
      }
    }
    for (const fig of ['first', 'append'] as const) {
      const mine = median(res.ours![fig]),
        theirs = median(res.uplot![fig]);
      // ratio < 1: the hand-written chart takes less time than uPlot.
      report({
        bench: 'chart',
        figure: `${fig === 'first' ? 'first_draw_7_charts' : 'append_redraw_7_charts'}`,
        unit: 'ms',
        value: mine,
        baseline: 'uPlot 1.6.32',
        baseline_value: theirs,
        points: n,
        runs: RUNS,
      });
    }
  }
} finally {
  await browser.close();
}
process.exit(0);
