// The one line every benchmark prints per figure.
export interface Figure {
  bench: string;
  figure: string;
  unit: string;
  value: number;
  baseline?: string | null;
  baseline_value?: number | null;
  /** value / baseline_value; higher is better for throughput units. */
  ratio?: number | null;
  [extra: string]: unknown;
}

export function report(f: Figure): void {
  const ratio = f.ratio ?? (f.baseline_value ? f.value / f.baseline_value : null);
  const line = {
    ...f,
    baseline: f.baseline ?? null,
    baseline_value: f.baseline_value ?? null,
    ratio: ratio === null ? null : round(ratio),
  };
  line.value = round(f.value);
  if (typeof line.baseline_value === 'number') line.baseline_value = round(line.baseline_value);
  console.log(JSON.stringify(line));
}

function round(x: number): number {
  return Math.abs(x) >= 100 ? Math.round(x * 10) / 10 : Math.round(x * 10000) / 10000;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** A run summary's accuracy, which a bench needs measured (null: the run had no eval set). */
export function measured(acc: number | null): number {
  if (acc === null)
    throw new Error('the run measured no held-out accuracy (no eval set): give the bench config an eval set');
  return acc;
}
