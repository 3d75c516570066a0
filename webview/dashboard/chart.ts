// A small canvas line chart for live metrics: appends are O(1), a redraw is one pass over the
// points (decimated to the canvas width), colours come from the theme's --vscode-charts-* vars.
// Legend with latest values (series toggles), axis titles, hover values, dots for few points,
// log scale, drag-to-zoom on steps. Kept instead of uPlot after `npm run bench -- chart`: a live
// append redraws 7 charts 3-6x faster (decimated); the first draw is within noise of uPlot's
// (0.7-1.5x across runs on a loaded machine). Figures in docs/extension.md.
export interface Series {
  key: string;
  xs: number[];
  ys: number[];
}

/** Bounds of the points (within the zoomed step range `view`, when given). */
export function extent(
  series: Series[],
  logY = false,
  view?: { x0: number; x1: number },
): { x0: number; x1: number; y0: number; y1: number } | undefined {
  let x0 = Infinity,
    x1 = -Infinity,
    y0 = Infinity,
    y1 = -Infinity;
  for (const s of series) {
    for (let i = 0; i < s.xs.length; i++) {
      const x = s.xs[i]!,
        y = s.ys[i]!;
      if (!Number.isFinite(y) || (logY && y <= 0)) continue;
      if (view && (x < view.x0 || x > view.x1)) continue;
      if (x < x0) x0 = x;
      if (x > x1) x1 = x;
      if (y < y0) y0 = y;
      if (y > y1) y1 = y;
    }
  }
  if (x0 === Infinity) return undefined;
  // A zoomed chart spans the chosen steps even where a series has no point at the edges.
  if (view) {
    x0 = view.x0;
    x1 = view.x1;
  }
  if (y0 === y1) {
    if (logY) {
      y0 /= 2;
      y1 *= 2;
    } else {
      y0 -= Math.abs(y0) * 0.1 || 1;
      y1 += Math.abs(y1) * 0.1 || 1;
    }
  }
  // A single step: centre it instead of pinning it to the left edge.
  if (x0 === x1) {
    x0 -= 1;
    x1 += 1;
  }
  return { x0, x1, y0, y1 };
}

/** About `n` round tick values covering [lo, hi] (1, 2, 5 x 10^k steps). */
export function niceTicks(lo: number, hi: number, n = 4): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / Math.max(1, n);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Powers of ten covering [lo, hi] (lo > 0), for a log axis. */
export function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    const v = 10 ** e;
    if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push(v);
  }
  return out.length ? out : [lo, hi];
}

/** Short, readable numbers for tick labels and hover values: 2k, 1.5M, 0.25, 3e-4. */
export function formatTick(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`;
  if (a >= 1e3) return `${Number((v / 1e3).toPrecision(3))}k`;
  if (a >= 1e-2) return String(Number(v.toPrecision(3)));
  return v.toExponential(0);
}

/** Index steps that keep at most ~2 points per pixel column. */
export function decimationStride(points: number, pixels: number): number {
  return Math.max(1, Math.floor(points / Math.max(1, pixels * 2)));
}

/** Index of the point with the step nearest `x` in a sorted array. */
export function nearestIndex(xs: number[], x: number): number {
  let lo = 0,
    hi = xs.length - 1;
  if (hi < 0) return -1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && Math.abs(xs[lo - 1]! - x) <= Math.abs(xs[lo]! - x) ? lo - 1 : lo;
}

const PALETTE = [
  '--vscode-charts-blue',
  '--vscode-charts-orange',
  '--vscode-charts-green',
  '--vscode-charts-purple',
  '--vscode-charts-red',
  '--vscode-charts-yellow',
];
const FALLBACK = ['#3794ff', '#d18616', '#89d185', '#b180d7', '#f14c4c', '#cca700'];

export interface ChartOptions {
  /** Axis titles. */
  xTitle?: string;
  yTitle?: string;
  /** Names shown in the legend (default: the keys). */
  labels?: Record<string, string>;
  /** Start on a log y axis (only values > 0 are drawn on it); the legend has a toggle. */
  logY?: boolean;
  /** What to say when the run has points but none for this chart. */
  absentText?: string;
  /**
   * Series drawn dashed and last, over the others: a sum that often equals one of its parts (the
   * total loss when only the policy loss counts) stays visible instead of hidden under it.
   */
  dashed?: string[];
}

/** Series indices in drawing order: solid ones first, the dashed ones last (on top). */
export function drawOrder(keys: readonly string[], dashed: readonly string[] = []): number[] {
  const idx = keys.map((_, i) => i);
  return [...idx.filter((i) => !dashed.includes(keys[i]!)), ...idx.filter((i) => dashed.includes(keys[i]!))];
}

export class LineChart {
  readonly series = new Map<string, Series>();
  private pending = false;
  logY: boolean;
  private hasData = false;
  /** Set by the app when the run has points at all (to tell "not recorded" from "waiting"); an empty chart redraws to say so. */
  get runHasData(): boolean {
    return this.hasData;
  }
  set runHasData(v: boolean) {
    if (v === this.hasData) return;
    this.hasData = v;
    this.schedule();
  }
  /** The legend (swatch, name, latest value per series) and the hover read-out, in the DOM. */
  readonly legend: HTMLElement;
  readonly hover: HTMLElement;
  private hoverStep: number | undefined;
  /** Series switched off from the legend. */
  readonly hidden = new Set<string>();
  /** The zoomed step range (drag across the plot; double-click resets). */
  view: { x0: number; x1: number } | undefined;
  private dragFrom: number | undefined;

  constructor(
    readonly canvas: HTMLCanvasElement,
    readonly keys: string[],
    readonly o: ChartOptions = {},
  ) {
    for (const k of keys) this.series.set(k, { key: k, xs: [], ys: [] });
    this.logY = !!o.logY;
    const doc = canvas.ownerDocument;
    this.legend = doc.createElement('div');
    this.legend.className = 'legend';
    this.hover = doc.createElement('div');
    this.hover.className = 'hover';
    this.hover.setAttribute('role', 'status');
    canvas.addEventListener('mousemove', (ev) => this.hoverAt((ev as MouseEvent).offsetX));
    canvas.addEventListener('mouseleave', () => {
      this.hoverStep = undefined;
      this.dragFrom = undefined;
      this.hover.textContent = '';
      this.schedule();
    });
    canvas.addEventListener('mousedown', (ev) => (this.dragFrom = (ev as MouseEvent).offsetX));
    canvas.addEventListener('mouseup', (ev) => {
      const from = this.dragFrom;
      this.dragFrom = undefined;
      const to = (ev as MouseEvent).offsetX;
      if (from !== undefined && Math.abs(to - from) > 4)
        this.zoomTo(this.stepAt(Math.min(from, to)), this.stepAt(Math.max(from, to)));
    });
    canvas.addEventListener('dblclick', () => this.zoomTo(undefined));
    this.renderLegend();
  }

  /**
   * `replace`: a repeated step takes the new value (a live point of a resumed run re-doing steps);
   * history merged after live points passes false so it never overwrites what arrived live.
   */
  add(step: number, values: Record<string, number>, replace = true): boolean {
    let any = false;
    for (const k of this.keys) {
      const v = values[k];
      if (v === undefined || !Number.isFinite(v)) continue;
      const s = this.series.get(k)!;
      // Out of order (history merged after live points): insert in place, replace a repeated step.
      const n = s.xs.length;
      if (n === 0 || step > s.xs[n - 1]!) {
        s.xs.push(step);
        s.ys.push(v);
      } else {
        const i = nearestIndex(s.xs, step);
        if (s.xs[i] === step) {
          if (!replace) continue;
          s.ys[i] = v;
        } else {
          const at = s.xs[i]! < step ? i + 1 : i;
          s.xs.splice(at, 0, step);
          s.ys.splice(at, 0, v);
        }
      }
      any = true;
    }
    if (any) this.schedule();
    return any;
  }

  clear(): void {
    for (const s of this.series.values()) {
      s.xs.length = 0;
      s.ys.length = 0;
    }
    this.hasData = false;
    this.schedule();
  }

  private visible(): Series[] {
    return [...this.series.values()].filter((s) => !this.hidden.has(s.key));
  }

  /** The step under canvas x (CSS pixels) on the current axis. */
  stepAt(px: number): number {
    const ex = extent(this.visible(), this.logY, this.view);
    if (!ex) return 0;
    const w = this.canvas.clientWidth || 300;
    return ex.x0 + ((px - LEFT) / Math.max(1, w - LEFT - RIGHT)) * (ex.x1 - ex.x0);
  }

  /** Show only steps x0..x1; undefined shows them all again. */
  zoomTo(x0: number | undefined, x1?: number): void {
    this.view = x0 === undefined || x1 === undefined || !(x1 > x0) ? undefined : { x0, x1 };
    this.schedule();
  }

  /** Switch a series off / on (its legend entry is a toggle button). */
  toggle(key: string): void {
    if (this.hidden.has(key)) this.hidden.delete(key);
    else this.hidden.add(key);
    this.schedule();
  }

  /** The values at the step nearest canvas x (CSS pixels), shown in the hover read-out. */
  hoverAt(px: number): string {
    if (!extent(this.visible(), this.logY, this.view)) return '';
    const step = this.stepAt(px);
    let best: number | undefined;
    for (const s of this.visible()) {
      const i = nearestIndex(s.xs, step);
      if (i >= 0 && (best === undefined || Math.abs(s.xs[i]! - step) < Math.abs(best - step))) best = s.xs[i]!;
    }
    if (best === undefined) return '';
    this.hoverStep = best;
    const parts = [`step ${best}`];
    for (const s of this.visible()) {
      const i = s.xs.indexOf(best);
      if (i >= 0) parts.push(`${this.label(s.key)} ${formatTick(s.ys[i]!)}`);
    }
    this.hover.textContent = parts.join(' · ');
    this.schedule();
    return this.hover.textContent;
  }

  private label(k: string): string {
    return this.o.labels?.[k] ?? k;
  }

  private colour(css: CSSStyleDeclaration | undefined, k: number): string {
    return css?.getPropertyValue(PALETTE[k % PALETTE.length]!).trim() || FALLBACK[k % FALLBACK.length]!;
  }

  renderLegend(): void {
    const doc = this.canvas.ownerDocument;
    const items = [...this.series.values()].map((s, k) => {
      const item = doc.createElement('span');
      item.className = 'legend-item';
      // Multi-series charts: each entry switches its series off and on.
      if (this.keys.length > 1) {
        item.setAttribute('role', 'button');
        item.setAttribute('tabindex', '0');
        item.setAttribute('aria-pressed', String(!this.hidden.has(s.key)));
        item.title = `Show / hide ${this.label(s.key)}`;
        item.addEventListener('click', () => this.toggle(s.key));
        item.addEventListener('keydown', (ev) => {
          if ((ev as KeyboardEvent).key === 'Enter' || (ev as KeyboardEvent).key === ' ') this.toggle(s.key);
        });
      }
      const sw = doc.createElement('span');
      sw.className = `swatch swatch-${k % PALETTE.length}${this.o.dashed?.includes(s.key) ? ' dashed' : ''}`;
      const last = s.ys.length ? ` ${formatTick(s.ys[s.ys.length - 1]!)}` : '';
      item.append(sw, `${this.label(s.key)}${last}`);
      return item;
    });
    this.legend.replaceChildren(...items);
  }

  private schedule(): void {
    if (this.pending) return;
    this.pending = true;
    const raf =
      this.canvas.ownerDocument.defaultView?.requestAnimationFrame ??
      ((f: FrameRequestCallback) => setTimeout(() => f(0), 16));
    raf(() => {
      this.pending = false;
      this.renderLegend();
      this.draw();
    });
  }

  /** What the empty chart says. */
  get emptyText(): string {
    return this.runHasData ? (this.o.absentText ?? 'not recorded by this run') : 'waiting for data…';
  }

  /** Returns false where there is no 2-D context (tests in a DOM without canvas). */
  draw(): boolean {
    const ctx = this.canvas.getContext('2d');
    if (!ctx) return false;
    const win = this.canvas.ownerDocument.defaultView!;
    const dpr = win.devicePixelRatio || 1;
    const w = this.canvas.clientWidth || 300,
      hgt = this.canvas.clientHeight || 150;
    if (this.canvas.width !== Math.round(w * dpr)) this.canvas.width = Math.round(w * dpr);
    if (this.canvas.height !== Math.round(hgt * dpr)) this.canvas.height = Math.round(hgt * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, hgt);
    const css = win.getComputedStyle(this.canvas.ownerDocument.body);
    const fg = css.getPropertyValue('--vscode-descriptionForeground').trim() || '#888';
    const grid = css.getPropertyValue('--vscode-editorWidget-border').trim() || 'rgba(128,128,128,0.3)';
    const font = css.getPropertyValue('--vscode-font-family').trim() || 'sans-serif';
    const all = [...this.series.values()];
    const logY = this.logY;
    const ex = extent(this.visible(), logY, this.view);
    ctx.font = `11px ${font}`;
    ctx.fillStyle = fg;
    if (!ex) {
      ctx.textAlign = 'center';
      ctx.fillText(this.emptyText, w / 2, hgt / 2);
      return true;
    }
    const ly = (y: number) => (logY ? Math.log10(y) : y);
    const Y0 = ly(ex.y0),
      Y1 = ly(ex.y1);
    const X = (x: number) => LEFT + ((x - ex.x0) / (ex.x1 - ex.x0)) * (w - LEFT - RIGHT);
    const Y = (y: number) => TOP + (1 - (ly(y) - Y0) / (Y1 - Y0)) * (hgt - TOP - BOTTOM);
    ctx.strokeStyle = grid;
    ctx.lineWidth = 1;
    for (const t of logY ? logTicks(ex.y0, ex.y1) : niceTicks(ex.y0, ex.y1, 4)) {
      const y = Math.round(Y(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(LEFT, y);
      ctx.lineTo(w - RIGHT, y);
      ctx.stroke();
      ctx.textAlign = 'right';
      ctx.fillText(formatTick(t), LEFT - 4, y + 4);
    }
    ctx.textAlign = 'center';
    for (const t of niceTicks(ex.x0, ex.x1, 5)) {
      if (!Number.isInteger(t) && ex.x1 - ex.x0 <= 5) continue;
      // The last label ends at the plot's edge instead of being cut off by it.
      const x = X(t);
      ctx.textAlign = x > w - RIGHT - 12 ? 'right' : 'center';
      ctx.fillText(formatTick(t), Math.min(x, w - 1), hgt - BOTTOM + 13);
    }
    ctx.textAlign = 'center';
    // Axis titles.
    if (this.o.xTitle) ctx.fillText(this.o.xTitle, LEFT + (w - LEFT - RIGHT) / 2, hgt - 2);
    if (this.o.yTitle) {
      ctx.save();
      ctx.translate(10, TOP + (hgt - TOP - BOTTOM) / 2);
      ctx.rotate(-Math.PI / 2);
      ctx.fillText(this.o.yTitle + (logY ? ' (log)' : ''), 0, 0);
      ctx.restore();
    }
    ctx.textAlign = 'left';
    if (this.view) ctx.fillText('zoomed · double-click to reset', LEFT + 4, TOP + 10);
    // Lines outside the plot (a zoomed range) are clipped to it.
    ctx.save();
    ctx.beginPath();
    ctx.rect(LEFT - 4, 0, w - LEFT - RIGHT + 8, hgt - BOTTOM + 4); // dots at the edges stay whole
    ctx.clip();
    for (const k of drawOrder(
      all.map((s) => s.key),
      this.o.dashed,
    )) {
      const s = all[k]!;
      if (!s.xs.length || this.hidden.has(s.key)) continue;
      const colour = this.colour(css, k);
      ctx.strokeStyle = colour;
      ctx.fillStyle = colour;
      ctx.lineWidth = 1.5;
      ctx.setLineDash(this.o.dashed?.includes(s.key) ? [6, 4] : []);
      ctx.beginPath();
      // Zoomed: only the points in range (and one either side, so lines reach the edges).
      const lo = this.view ? Math.max(0, nearestIndex(s.xs, this.view.x0) - 1) : 0;
      const hi = this.view ? Math.min(s.xs.length - 1, nearestIndex(s.xs, this.view.x1) + 1) : s.xs.length - 1;
      const stride = decimationStride(hi - lo + 1, w - LEFT - RIGHT);
      let started = false;
      for (let i = lo; i <= hi; i += stride) {
        if (logY && !(s.ys[i]! > 0)) continue;
        const px = X(s.xs[i]!),
          py = Y(s.ys[i]!);
        if (!started) ctx.moveTo(px, py);
        else ctx.lineTo(px, py);
        started = true;
      }
      if (!logY || s.ys[hi]! > 0) ctx.lineTo(X(s.xs[hi]!), Y(s.ys[hi]!));
      ctx.stroke();
      // Few points (an eval every N steps, a single point): each is drawn as a dot, so it shows.
      if (hi - lo + 1 <= 40) {
        for (let i = lo; i <= hi; i++) {
          if (logY && !(s.ys[i]! > 0)) continue;
          ctx.beginPath();
          ctx.arc(X(s.xs[i]!), Y(s.ys[i]!), 2.5, 0, 2 * Math.PI);
          ctx.fill();
        }
      }
    }
    ctx.setLineDash([]);
    ctx.restore();
    if (this.hoverStep !== undefined) {
      const x = Math.round(X(this.hoverStep)) + 0.5;
      ctx.strokeStyle = fg;
      ctx.beginPath();
      ctx.moveTo(x, TOP);
      ctx.lineTo(x, hgt - BOTTOM);
      ctx.stroke();
    }
    return true;
  }
}

const LEFT = 48,
  RIGHT = 8,
  TOP = 8,
  BOTTOM = 30;
