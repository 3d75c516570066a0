// `npm run bench -- lr-auto`: GRPO on each model of the pretrained spread (tools/pretrained-spread,
// issue 41 item 2), full fine-tuning and LoRA, at a sweep of fixed learning rates and at `lr: auto`,
// every run with the same number of samples, through the real run path (config -> runJob). Prints one
// JSON line per run and one per model x mode (best fixed lr, its gain, auto's gain / best gain), then a
// markdown table. `lr-auto defaults` instead sweeps the other pretrained defaults (KL coefficient, clip
// range, sampling temperature, warm-up, grad clip) one at a time around their values (issue 41 item 6).
// Sizes: BENCH_STEPS (20), BENCH_TASKS (tasks per step, 8), BENCH_REPEAT (samples per task, 8),
// BENCH_MODELS (comma list of spread names, all), BENCH_MODES (full,lora), BENCH_LRS_FULL / BENCH_LRS_LORA
// (comma lists), BENCH_AUTO (1: run the auto column; 0 where lr: auto is not built), BENCH_AUTO_TARGET
// (trainer.lr_auto.target_kl of the auto column), BENCH_RUN_CAP_S (150).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../backend/model/engine.js';
import { SPREAD, spreadModel, type SpreadModel } from '../tools/pretrained-spread/index.js';
import { grpoRun, type GrpoRunOptions, type GrpoRunResult } from '../tools/pretrained-spread/grpo-run.js';
import { report } from './report.js';

const env = (k: string, d: string) => process.env[k] ?? d;
const list = (k: string, d: string) => env(k, d).split(',').filter(Boolean);
const STEPS = Number(env('BENCH_STEPS', '20'));
const TASKS = Number(env('BENCH_TASKS', '8'));
const REPEAT = Number(env('BENCH_REPEAT', '8'));
const MODELS = list('BENCH_MODELS', SPREAD.map((s) => s.name).join(','));
const MODES = list('BENCH_MODES', 'full,lora') as ('full' | 'lora')[];
const LRS = {
  full: list('BENCH_LRS_FULL', '1e-5,1e-4,3e-4,1e-3,3e-3').map(Number),
  lora: list('BENCH_LRS_LORA', '1e-4,1e-3,3e-3,1e-2,3e-2').map(Number),
};
const AUTO = env('BENCH_AUTO', '1') === '1';
/** trainer.lr_auto.target_kl for the auto column (unset: the controller's default). */
const AUTO_TARGET = process.env.BENCH_AUTO_TARGET;
/** A run stopped after this long (BENCH_RUN_CAP_S) is counted as collapsed: its policy made no trainable samples. */
const CAP_S = Number(env('BENCH_RUN_CAP_S', '150'));

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-bench-lr-auto-'));
process.on('exit', () => rmSync(root, { recursive: true, force: true }));
const base: Omit<GrpoRunOptions, 'lr' | 'lora'> = {
  steps: STEPS,
  tasksPerStep: TASKS,
  repeat: REPEAT,
  capSeconds: CAP_S,
};
const t0 = Date.now();
console.error(`lr-auto: ${MODELS.join(', ')}; ${MODES.join('+')}; ${STEPS} steps x ${TASKS} tasks x ${REPEAT} samples`);

/**
 * Collapsed: the run's own guard warned, its held-out accuracy fell, or it was stopped at the cap. (The
 * reference KL alone does not say: a run that ends at 100% has moved far from a biased reference.)
 */
const collapsed = (r: GrpoRunResult) => r.warnings.includes('policy_collapse') || r.final < r.base - 0.05 || r.stopped;
const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');

async function one(m: SpreadModel, label: string, o: Partial<GrpoRunOptions>): Promise<GrpoRunResult> {
  const r = await grpoRun(m, root, `${m.spec.name}-${label}`, { ...base, ...o });
  report({
    bench: 'lr-auto',
    figure: `${m.spec.name} ${label} held-out gain`,
    unit: 'accuracy',
    value: r.gain,
    base: r.base,
    final: r.final,
    collapsed: collapsed(r),
    warnings: r.warnings,
    stopped: r.stopped,
    max_ref_kl: Number(r.maxRefKl.toFixed(3)),
    lr_path: [r.lrs[0], r.lrs[Math.floor(r.lrs.length / 2)], r.lrs.at(-1)],
    seconds: r.seconds,
  });
  return r;
}

async function lrSweep(rows: string[]): Promise<void> {
  for (const name of MODELS) {
    const m = await spreadModel(name);
    for (const mode of MODES) {
      const lora = mode === 'lora';
      const fixed: { lr: number; r: GrpoRunResult }[] = [];
      for (const lr of LRS[mode]) fixed.push({ lr, r: await one(m, `${mode}-lr${lr}`, { lr, lora }) });
      const best = fixed.reduce((a, b) => (b.r.gain > a.r.gain ? b : a));
      const auto = AUTO
        ? await one(m, `${mode}-auto`, {
            lr: 'auto',
            lora,
            trainerExtra: AUTO_TARGET ? `  lr_auto: { target_kl: ${AUTO_TARGET} }` : undefined,
          })
        : undefined;
      const ratio = auto && best.r.gain > 0 ? auto.gain / best.r.gain : Number.NaN;
      report({
        bench: 'lr-auto',
        figure: `${name} ${mode} auto gain / best fixed gain`,
        unit: 'ratio',
        value: ratio,
        best_lr: best.lr,
        best_gain: best.r.gain,
        auto_gain: auto?.gain ?? null,
      });
      const s = m.spec;
      const sweep = fixed.map((f) => `${f.lr}:${fmt(f.r.gain)}${collapsed(f.r) ? '!' : ''}`).join(' ');
      const path = auto ? `${auto.lrs[0]?.toPrecision(2)} -> ${auto.lrs.at(-1)?.toPrecision(2)}` : '-';
      rows.push(
        `| ${name} | ${s.layout} | ${s.hidden} | ${s.layers} | ${s.tokenizer} | ${s.tied ? 'tied' : 'untied'} | ${mode} | ${fmt(best.r.base)} | ${sweep} | ${best.lr} | ${fmt(best.r.gain)} | ${auto ? fmt(auto.gain) : '-'} | ${fmt(ratio)} | ${path} | ${[...fixed.filter((f) => collapsed(f.r)).map((f) => f.lr), ...(auto && collapsed(auto) ? ['auto'] : [])].join(', ') || 'none'} |`,
      );
    }
  }
  console.log(
    '\n| model | layout | hidden | layers | tokenizer | head | mode | before | fixed lr: gain (! collapsed) | best lr | best gain | auto gain | auto/best | auto lr start -> end | collapsed |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
}

/** The defaults a run from model.checkpoint takes (GRPO's bundle, trainer-defaults.ts with lr auto). */
const FIXED_LR = process.env.BENCH_LR !== undefined && process.env.BENCH_LR !== 'auto';
const DEFAULTS: Record<string, number> = {
  kl_coef: 0.001,
  clip_range: 0.2,
  temperature: 1,
  // A fixed lr from a checkpoint warms up 5 steps; lr auto none.
  warmup_steps: FIXED_LR ? 5 : 0,
  grad_clip: 1,
};
const isDefault = (knob: string, v: number | undefined) => DEFAULTS[knob] === v;

/** Item 6: one default at a time, around its value, at the pretrained default lr (or BENCH_LR). */
async function defaultsSweep(rows: string[]): Promise<void> {
  const lr = process.env.BENCH_LR
    ? process.env.BENCH_LR === 'auto'
      ? 'auto'
      : Number(process.env.BENCH_LR)
    : undefined;
  const knobs: [string, GrpoRunOptions[]][] = [
    ['kl_coef', [0, 0.001, 0.01].map((v) => ({ ...base, params: { kl_coef: v } }))],
    ['clip_range', [0.1, 0.2, 0.3].map((v) => ({ ...base, params: { clip_range: v } }))],
    ['temperature', [0.7, 1, 1.3].map((v) => ({ ...base, temperature: v }))],
    ['warmup_steps', [0, 5].map((v) => ({ ...base, warmup: v }))],
    ['grad_clip', [0.3, 1, 10].map((v) => ({ ...base, gradClip: v }))],
  ];
  const seen = new Map<string, GrpoRunResult>();
  for (const name of MODELS) {
    const m = await spreadModel(name);
    for (const mode of MODES)
      for (const [knob, runs] of knobs) {
        const cells: string[] = [];
        for (const o of runs) {
          const v = o.params?.[knob] ?? o.temperature ?? o.warmup ?? o.gradClip;
          // The current default of each knob is the same run: made once.
          const key = `${name} ${mode} ${isDefault(knob, v) ? 'defaults' : `${knob}${v}`}`;
          const extra =
            AUTO_TARGET && (lr ?? 'auto') === 'auto' ? `  lr_auto: { target_kl: ${AUTO_TARGET} }` : undefined;
          const r =
            seen.get(key) ??
            (await one(m, key.replaceAll(' ', '-'), { ...o, lr, lora: mode === 'lora', trainerExtra: extra }));
          seen.set(key, r);
          cells.push(`${v}: ${fmt(r.gain)}${collapsed(r) ? '!' : ''}`);
        }
        rows.push(`| ${name} | ${mode} | ${knob} | ${cells.join(' · ')} |`);
      }
  }
  console.log('\n| model | mode | setting | value: held-out gain (! collapsed) |');
  console.log('| --- | --- | --- | --- |');
}

const rows: string[] = [];
await (process.argv[2] === 'defaults' ? defaultsSweep(rows) : lrSweep(rows));
for (const r of rows) console.log(r);
console.log(`\n${((Date.now() - t0) / 60000).toFixed(1)} min wall`);
