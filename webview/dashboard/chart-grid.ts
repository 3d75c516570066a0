// The dashboard's chart grid: one line chart per entry of CHARTS (protocol.ts), each with its legend,
// hover readout and, where the values span decades, a log-scale toggle.
import { h } from '../shared/dom.js';
import { LineChart } from './chart.js';
import { CHARTS } from './protocol.js';

/** Builds the charts into `grid`, in CHARTS order. */
export function chartGrid(doc: Document, grid: HTMLElement): LineChart[] {
  return CHARTS.map((c) => {
    const canvas = h(doc, 'canvas', { 'aria-label': `${c.title} by step` }) as HTMLCanvasElement;
    const chart = new LineChart(canvas, c.keys, {
      xTitle: 'step',
      yTitle: c.yTitle,
      labels: c.labels,
      absentText: c.absent,
      ...(c.dashed ? { dashed: c.dashed } : {}),
    });
    const caption = h(doc, 'figcaption', {}, h(doc, 'span', { class: 'chart-title', text: c.title }), chart.legend);
    if (c.log) {
      const log = h(doc, 'vscode-button', {
        class: 'log-toggle',
        secondary: true,
        title: 'Log scale (values > 0)',
        text: 'log',
      });
      log.addEventListener('click', () => {
        chart.logY = !chart.logY;
        log.toggleAttribute('pressed', chart.logY);
        chart.draw();
      });
      caption.append(log);
    }
    grid.append(h(doc, 'figure', { class: 'chart', 'data-title': c.title }, caption, canvas, chart.hover));
    return chart;
  });
}
