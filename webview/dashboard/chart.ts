// A small canvas line chart for live metrics: appends are O(1), a redraw is one pass over the
// points (decimated to the canvas width), colours come from the theme's --vscode-charts-* vars.
export interface Series {
  key: string;
  xs: number[];
  ys: number[];
}

export function extent(series: Series[]): { x0: number; x1: number; y0: number; y1: number } | undefined {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (const s of series) {
    for (let i = 0; i < s.xs.length; i++) {
      const x = s.xs[i]!, y = s.ys[i]!;
      if (!Number.isFinite(y)) continue;
      if (x < x0) x0 = x;
      if (x > x1) x1 = x;
      if (y < y0) y0 = y;
      if (y > y1) y1 = y;
    }
  }
  if (x0 === Infinity) return undefined;
  if (y0 === y1) {
    y0 -= Math.abs(y0) * 0.1 || 1;
    y1 += Math.abs(y1) * 0.1 || 1;
  }
  if (x0 === x1) x1 = x0 + 1;
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

/** Index steps that keep at most ~2 points per pixel column (min/max kept per bucket would be nicer; this is enough for smooth curves). */
export function decimationStride(points: number, pixels: number): number {
  return Math.max(1, Math.floor(points / Math.max(1, pixels * 2)));
}

const PALETTE = ['--vscode-charts-blue', '--vscode-charts-orange', '--vscode-charts-green', '--vscode-charts-purple', '--vscode-charts-red', '--vscode-charts-yellow'];

export class LineChart {
  readonly series = new Map<string, Series>();
  private pending = false;

  constructor(
    readonly canvas: HTMLCanvasElement,
    readonly keys: string[],
  ) {
    for (const k of keys) this.series.set(k, { key: k, xs: [], ys: [] });
  }

  add(step: number, values: Record<string, number>): boolean {
    let any = false;
    for (const k of this.keys) {
      const v = values[k];
      if (v === undefined || !Number.isFinite(v)) continue;
      const s = this.series.get(k)!;
      s.xs.push(step);
      s.ys.push(v);
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
    this.schedule();
  }

  private schedule(): void {
    if (this.pending) return;
    this.pending = true;
    const raf = this.canvas.ownerDocument.defaultView?.requestAnimationFrame ?? ((f: FrameRequestCallback) => setTimeout(() => f(0), 16));
    raf(() => {
      this.pending = false;
      this.draw();
    });
  }

  /** Returns false where there is no 2-D context (tests in a DOM without canvas). */
  draw(): boolean {
    const ctx = this.canvas.getContext('2d');
    if (!ctx) return false;
    const win = this.canvas.ownerDocument.defaultView!;
    const dpr = win.devicePixelRatio || 1;
    const w = this.canvas.clientWidth || 300, hgt = this.canvas.clientHeight || 150;
    if (this.canvas.width !== Math.round(w * dpr)) this.canvas.width = Math.round(w * dpr);
    if (this.canvas.height !== Math.round(hgt * dpr)) this.canvas.height = Math.round(hgt * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, hgt);
    const css = win.getComputedStyle(this.canvas.ownerDocument.body);
    const fg = css.getPropertyValue('--vscode-descriptionForeground').trim() || '#888';
    const grid = css.getPropertyValue('--vscode-editorWidget-border').trim() || 'rgba(128,128,128,0.3)';
    const font = css.getPropertyValue('--vscode-font-family').trim() || 'sans-serif';
    const all = [...this.series.values()];
    const ex = extent(all);
    const left = 44, right = 8, top = 8, bottom = 18;
    ctx.font = `10px ${font}`;
    ctx.fillStyle = fg;
    if (!ex) {
      ctx.fillText('waiting for data…', left, hgt / 2);
      return true;
    }
    const X = (x: number) => left + ((x - ex.x0) / (ex.x1 - ex.x0)) * (w - left - right);
    const Y = (y: number) => top + (1 - (y - ex.y0) / (ex.y1 - ex.y0)) * (hgt - top - bottom);
    ctx.strokeStyle = grid;
    ctx.lineWidth = 1;
    for (const t of niceTicks(ex.y0, ex.y1, 4)) {
      const y = Math.round(Y(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(left, y);
      ctx.lineTo(w - right, y);
      ctx.stroke();
      ctx.fillText(Math.abs(t) >= 1000 ? t.toExponential(1) : String(t), 2, y + 3);
    }
    for (const t of niceTicks(ex.x0, ex.x1, 5)) ctx.fillText(String(t), X(t) - 6, hgt - 4);
    all.forEach((s, k) => {
      if (!s.xs.length) return;
      ctx.strokeStyle = css.getPropertyValue(PALETTE[k % PALETTE.length]!).trim() || ['#3794ff', '#d18616', '#89d185', '#b180d7'][k % 4]!;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      const stride = decimationStride(s.xs.length, w - left - right);
      for (let i = 0; i < s.xs.length; i += stride) {
        const px = X(s.xs[i]!), py = Y(s.ys[i]!);
        if (i === 0) ctx.moveTo(px, py);
        else ctx.lineTo(px, py);
      }
      const last = s.xs.length - 1;
      ctx.lineTo(X(s.xs[last]!), Y(s.ys[last]!));
      ctx.stroke();
    });
    return true;
  }
}
