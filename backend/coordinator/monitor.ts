// Run monitoring: metrics as JSONL (one object per event), a self-contained HTML report with the
// learning curves, and a terminal progress line with ETA.
import { appendFileSync, readFileSync, existsSync, writeFileSync } from 'node:fs';
import type { RunEngines, RunWarning } from '../core/protocol.js';
import { logger } from '../core/log.js';
import { recordScalars, type EventFileWriter } from './tensorboard.js';

const log = logger('monitor');

export interface MetricRecord {
  t: number;
  /** 'train' | 'explore' | 'eval' | 'stage' | 'state' */
  kind: string;
  stage?: string;
  step?: number;
  [k: string]: unknown;
}

/** The warning records of a run's metrics (`kind: warning`, trainer/collapse-guard.ts), as the summary and the dashboard list them. */
export function runWarnings(recs: MetricRecord[]): RunWarning[] {
  return recs
    .filter(
      (x) =>
        x.kind === 'warning' &&
        (x.code === 'policy_collapse' ||
          x.code === 'eval_no_result' ||
          x.code === 'run_stalled' ||
          x.code === 'no_trainable_rollout') &&
        typeof x.message === 'string' &&
        typeof x.step === 'number',
    )
    .map((x) => ({
      code: x.code as RunWarning['code'],
      step: x.step!,
      ...(typeof x.stage === 'string' ? { stage: x.stage } : {}),
      message: String(x.message),
      values: numbers(x.values),
    }));
}

/**
 * What the run computes on, from the latest segment of its metrics: the tensor engine of each process
 * (`kind: engine` records, model/engine.ts engineRecord) and the rollout engine of the latest explore
 * step (its `rollout` metrics: llama.cpp's backend and devices, auto's choices, worker threads; none
 * when the policy samples in the run's own process).
 */
export function runEngines(recs: MetricRecord[]): RunEngines | undefined {
  const tensor = new Map<string, string>();
  let rollout: string | undefined;
  for (const r of recs) {
    // A resumed run may run on another engine (the setting changed): what it uses now counts.
    if (r.kind === 'segment') {
      tensor.clear();
      rollout = undefined;
    } else if (r.kind === 'engine' && typeof r.component === 'string' && typeof r.tensor === 'string')
      tensor.set(r.component, r.tensor);
    else if (r.kind === 'explore') rollout = rolloutLabel(r.rollout);
  }
  // The run's own process only coordinates where trainer and explorer processes named theirs.
  if (tensor.size > 1) tensor.delete('run');
  const distinct = new Set(tensor.values());
  const t = distinct.size <= 1 ? [...distinct][0] : [...tensor].map(([c, e]) => `${c}: ${e}`).join(' · ');
  if (t === undefined && rollout === undefined) return undefined;
  return { ...(t !== undefined ? { tensor: t } : {}), ...(rollout !== undefined ? { rollout } : {}) };
}

function rolloutLabel(x: unknown): string {
  if (!x || typeof x !== 'object') return 'native (in process)';
  const m = x as Record<string, unknown>;
  if (m.engine === 'llama-cpp') return llamaLabel(m);
  if (m.engine === 'auto') {
    const b = m.batches && typeof m.batches === 'object' ? (m.batches as Record<string, unknown>) : {};
    const llama = m.llama_cpp
      ? llamaLabel(m.llama_cpp as Record<string, unknown>)
      : typeof m.llama_cpp_unavailable === 'string'
        ? `llama.cpp (unavailable: ${m.llama_cpp_unavailable})`
        : 'llama.cpp (not used yet)';
    const native = m.native ? rolloutLabel(m.native) : 'native (in process)';
    return `auto: ${native} ${Number(b.native ?? 0)} batches, ${llama} ${Number(b['llama-cpp'] ?? 0)}`;
  }
  if (typeof m.workers === 'number') return `native (${m.workers} worker thread${m.workers === 1 ? '' : 's'})`;
  return 'native';
}

/** llama.cpp's backend (cuda, vulkan, metal; false: the CPU) and devices, known after its first load. */
function llamaLabel(m: Record<string, unknown>): string {
  if (m.gpu === undefined) return 'llama.cpp (its device is known after the first load)';
  const devices = Array.isArray(m.gpu_devices) ? m.gpu_devices.filter((d) => typeof d === 'string') : [];
  return `llama.cpp ${m.gpu === false ? 'cpu' : String(m.gpu)}${devices.length ? `: ${devices.join(', ')}` : ''}`;
}

function numbers(v: unknown): Record<string, number> {
  if (!v || typeof v !== 'object') return {};
  return Object.fromEntries(Object.entries(v).filter(([, x]) => typeof x === 'number' && Number.isFinite(x))) as Record<
    string,
    number
  >;
}

export class MetricsLog {
  /** TENSORBOARD: where this process's records also go as TensorBoard scalars (monitor.tensorboard). */
  constructor(
    readonly file: string,
    private tensorboard?: EventFileWriter,
  ) {}
  write(rec: Omit<MetricRecord, 't'>): void {
    const full = { t: Date.now(), ...rec } as MetricRecord;
    appendFileSync(this.file, JSON.stringify(full) + '\n');
    this.toTensorboard(full);
  }
  /** A record with a step as scalars at that step. TensorBoard is a view of metrics.jsonl: a failed write there warns once and stops, never the run. */
  toTensorboard(rec: MetricRecord): void {
    if (!this.tensorboard || typeof rec.step !== 'number') return;
    try {
      this.tensorboard.scalars(rec.step, recordScalars(rec), rec.t / 1000);
    } catch (e) {
      log.warn(`TensorBoard events no longer written (${this.tensorboard.file}): ${(e as Error).message}`);
      this.tensorboard = undefined;
    }
  }
  read(): MetricRecord[] {
    if (!existsSync(this.file)) return [];
    return readFileSync(this.file, 'utf8')
      .split('\n')
      .filter((l) => l.trim())
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as MetricRecord];
        } catch {
          return []; // a line cut by a kill: skip it, keep the rest
        }
      });
  }
}

export class Progress {
  private readonly start = Date.now();
  private last = 0;
  private lastDecile = -1;
  constructor(
    private readonly total: number,
    private readonly label: string,
    private readonly out: NodeJS.WriteStream = process.stderr,
  ) {}
  update(done: number, extra = ''): void {
    const now = Date.now();
    if (now - this.last < 250 && done < this.total) return;
    this.last = now;
    const frac = Math.min(1, done / Math.max(1, this.total));
    const el = (now - this.start) / 1000;
    const eta = frac > 0 ? el / frac - el : NaN;
    const w = 24;
    const bar = '#'.repeat(Math.round(frac * w)).padEnd(w, '.');
    const line = `${this.label} [${bar}] ${done}/${this.total} ${fmt(el)} elapsed, ETA ${Number.isFinite(eta) ? fmt(eta) : '?'} ${extra}`;
    if (this.out.isTTY) this.out.write(`\r${line.slice(0, (this.out.columns ?? 120) - 1)}`);
    else if (Math.floor(frac * 10) !== this.lastDecile) {
      // Logs and pipes get one line per 10%.
      this.lastDecile = Math.floor(frac * 10);
      this.out.write(line + '\n');
    }
  }
  done(): void {
    if (this.out.isTTY) this.out.write('\n');
  }
}

function fmt(s: number): string {
  return s >= 60 ? `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s` : `${s.toFixed(0)}s`;
}

interface Series {
  name: string;
  points: [number, number][];
}

/** Inline SVG line chart: no scripts, no external resources. */
function chart(title: string, series: Series[], xLabel: string): string {
  const W = 460;
  const H = 220;
  const P = 36;
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) return '';
  const xs = all.map((p) => p[0]);
  const ys = all.map((p) => p[1]).filter(Number.isFinite);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs) || 1];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (y0 === y1) [y0, y1] = [y0 - 1, y1 + 1];
  const sx = (x: number) => P + ((x - x0) / (x1 - x0 || 1)) * (W - 2 * P);
  const sy = (y: number) => H - P - ((y - y0) / (y1 - y0)) * (H - 2 * P);
  const colors = ['#3b82f6', '#ef4444', '#10b981', '#f59e0b', '#8b5cf6'];
  const lines = series
    .map((s, i) => {
      const d = s.points
        .filter((p) => Number.isFinite(p[1]))
        .map((p, k) => `${k ? 'L' : 'M'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`)
        .join('');
      return `<path d="${d}" fill="none" stroke="${colors[i % colors.length]}" stroke-width="1.6"/><text x="${W - P}" y="${14 + 13 * i}" text-anchor="end" fill="${colors[i % colors.length]}" font-size="11">${esc(s.name)}</text>`;
    })
    .join('');
  return `<figure><figcaption>${esc(title)}</figcaption><svg width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">
<rect x="${P}" y="${P}" width="${W - 2 * P}" height="${H - 2 * P}" fill="none" stroke="#ccc"/>
<text x="${P - 4}" y="${P + 4}" text-anchor="end" font-size="10">${y1.toPrecision(3)}</text>
<text x="${P - 4}" y="${H - P}" text-anchor="end" font-size="10">${y0.toPrecision(3)}</text>
<text x="${W / 2}" y="${H - 8}" text-anchor="middle" font-size="10">${esc(xLabel)} ${x0}..${x1}</text>${lines}</svg></figure>`;
}

/** policy_loss (an objective's policy part), else pg_loss, else grpo_loss: the dashboard's `policy`. */
function policySeries(
  train: MetricRecord[],
  ser: (rows: MetricRecord[], key: string, name?: string) => Series,
): Series {
  const pick = (r: MetricRecord) => [r.policy_loss, r.pg_loss, r.grpo_loss].find((v) => typeof v === 'number');
  return {
    ...ser([], 'loss', 'policy'),
    points: train.flatMap((r) =>
      pick(r) === undefined ? [] : [[Number(r.step ?? 0), pick(r) as number] as [number, number]],
    ),
  };
}

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

/**
 * Seconds the run has run, over every segment (a start and each resume writes a `segment` record; a
 * segment ends at its last record): not the gaps while it was stopped, not only the last segment.
 */
export function runSeconds(recs: MetricRecord[], now = Date.now()): { seconds: number; segments: number } {
  if (!recs.length) return { seconds: 0, segments: 0 };
  const starts = recs.flatMap((r, i) => (r.kind === 'segment' && i > 0 ? [i] : []));
  const bounds = [0, ...starts];
  let ms = 0;
  bounds.forEach((b, k) => {
    const last = k + 1 < bounds.length ? recs[bounds[k + 1]! - 1]!.t : now;
    ms += Math.max(0, last - recs[b]!.t);
  });
  return { seconds: ms / 1000, segments: bounds.length };
}

/** A series over decades on the linear chart: log10 of its positive values. */
function log10Series(s: Series): Series {
  return { name: `log10 ${s.name}`, points: s.points.filter((p) => p[1] > 0).map((p) => [p[0], Math.log10(p[1])]) };
}

/** The latest value in a series name (`policy (last 0.442)`), as the dashboard's legend shows it. */
function withLast(s: Series): Series {
  const v = s.points.at(-1)?.[1];
  return v === undefined ? s : { ...s, name: `${s.name} (last ${Number(v.toPrecision(3))})` };
}

/** Write the HTML report of a run from its metrics. */
export function writeReport(
  file: string,
  title: string,
  recs: MetricRecord[],
  summary: Record<string, unknown>,
): string {
  const train = recs.filter((r) => r.kind === 'train');
  const explore = recs.filter((r) => r.kind === 'explore');
  const evals = recs.filter((r) => r.kind === 'eval');
  const t0 = recs[0]?.t ?? 0;
  const ser = (
    rows: MetricRecord[],
    key: string,
    name = key,
    x: (r: MetricRecord) => number = (r) => Number(r.step ?? 0),
  ): Series => ({
    name,
    points: rows.filter((r) => typeof r[key] === 'number').map((r) => [x(r), r[key] as number]),
  });
  const sec = (r: MetricRecord) => Math.round((r.t - t0) / 1000);
  const charts = [
    chart('reward (explorer)', [ser(explore, 'reward_mean', 'mean reward', sec)], 'seconds'),
    chart('held-out accuracy', [ser(evals, 'accuracy', 'accuracy', sec)], 'seconds'),
    // The dashboard's series (process-run-controller.ts toPoints): `policy` is the algorithm's whole
    // policy loss (MIX: (1 - mu)·GRPO + mu·SFT); GRPO's own part stays near 0 by construction (group-
    // normalised advantages at ratio 1), so it alone read as a flat 0 beside the dashboard's policy.
    chart(
      'losses',
      [
        ser(train, 'loss', 'total'),
        policySeries(train, ser),
        ser(train, 'sft_loss', 'SFT'),
        ser(train, 'critic_loss', 'critic (value)'),
      ]
        .filter((s) => s.points.length)
        .map(withLast),
      'trainer step',
    ),
    chart(
      'KL and entropy',
      [ser(train, 'kl'), ser(train, 'ppo_kl'), ser(train, 'entropy')].filter((s) => s.points.length),
      'trainer step',
    ),
    // trainer.lr: auto: the lr and the update KL it keeps near its target, over decades (log10).
    chart(
      'step size (log10)',
      [ser(train, 'lr', 'lr'), ser(train, 'update_kl', 'update KL'), ser(train, 'update_kl_target', 'update KL target')]
        .filter((s) => s.points.length)
        .map(log10Series),
      'trainer step',
    ),
    chart(
      'zero-variance groups',
      [ser(train, 'zero_variance_share', 'share of groups with all rewards equal')].filter((s) => s.points.length),
      'trainer step',
    ),
    chart(
      'throughput',
      [ser(train, 'tokens_per_s', 'trainer tok/s'), ser(explore, 'tokens_per_s', 'explorer tok/s')].filter(
        (s) => s.points.length,
      ),
      'step',
    ),
    chart(
      'idle fraction',
      [
        ser(
          recs.filter((r) => r.kind === 'state'),
          'trainer_idle',
          'trainer',
        ),
        ser(
          recs.filter((r) => r.kind === 'state'),
          'explorer_idle',
          'explorer',
        ),
      ].filter((s) => s.points.length),
      'step',
    ),
  ].join('\n');
  const rows = Object.entries(summary)
    .map(
      ([k, v]) =>
        `<tr><th>${esc(k)}</th><td>${esc(typeof v === 'number' ? String(Math.round(v * 10000) / 10000) : String(v))}</td></tr>`,
    )
    .join('');
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>body{font:13px system-ui,sans-serif;margin:24px;color:#222}figure{display:inline-block;margin:8px}figcaption{font-weight:600}table{border-collapse:collapse}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left}</style>
</head><body><h1>${esc(title)}</h1><table>${rows}</table>${charts}</body></html>`;
  writeFileSync(file, html);
  return file;
}
