// Host side of the training dashboard: run status, metrics history and live metrics notifications.
import type * as vscode from 'vscode';
import YAML from 'yaml';
import type { DashboardNotifications, DashboardRequests } from '../../webview/dashboard/protocol.js';
import type { Services } from '../services.js';
import type { RunModelInfo } from '../../backend/core/protocol.js';
import { resolveTrainerSettings } from '../../backend/core/trainer-defaults.js';
import { TypedPanel, type Handlers } from './panel.js';
import { evaluateWithProgress } from '../commands/evaluate.js';
import { pauseTraining, stopTraining } from '../commands/training.js';

/**
 * The run's config as YAML, as configs are written (the registry keeps it validated, defaults filled
 * in), headed by the model the run trains. From `model.checkpoint` the preset defaults the validation
 * filled in (`model.size`, a `tokenizer` without `path`) are read by nothing, so they are left out:
 * the header names the checkpoint's own architecture, size, LoRA rank and tokenizer instead.
 */
export function configYaml(config: unknown, path?: string, model?: RunModelInfo): string {
  const head = [
    '# as validated at the start of the run (defaults filled in)',
    ...(path ? [`# from ${path}`] : []),
    ...(model ? [`# model: ${model.label}`, `# tokenizer: ${model.tokenizer}`] : []),
    ...trainerLine(config),
  ].join('\n');
  let shown = config;
  const c = config && typeof config === 'object' ? (config as Record<string, unknown>) : undefined;
  const m = c?.model && typeof c.model === 'object' ? (c.model as Record<string, unknown>) : undefined;
  if (c && m && typeof m.checkpoint === 'string') {
    const { size: _size, ...modelRest } = m;
    const tok = c.tokenizer && typeof c.tokenizer === 'object' ? (c.tokenizer as Record<string, unknown>) : undefined;
    const { tokenizer: _tok, ...rest } = c;
    shown = { ...rest, model: modelRest, ...(tok?.path !== undefined ? { tokenizer: c.tokenizer } : {}) };
    // Keep the keys in the config's own order (model before taskset).
    shown = Object.fromEntries(
      Object.keys(c)
        .filter((k) => k in (shown as object))
        .map((k) => [k, (shown as Record<string, unknown>)[k]]),
    );
  }
  return `${head}\n${YAML.stringify(shown, { lineWidth: 0 })}`;
}

/** The lr, warm-up and clip the run trains with and why (unset ones are defaults: a pretrained checkpoint's are not a preset's). */
function trainerLine(config: unknown): string[] {
  if (!config || typeof config !== 'object') return [];
  const obj = (v: unknown): Record<string, unknown> =>
    v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
  const m = obj((config as Record<string, unknown>).model);
  const t = obj((config as Record<string, unknown>).trainer);
  const view = {
    model: { checkpoint: typeof m.checkpoint === 'string' ? m.checkpoint : undefined, lora: m.lora },
    trainer: {
      lr: t.lr === 'auto' ? ('auto' as const) : num(t.lr),
      warmup_steps: num(t.warmup_steps),
      grad_clip: num(t.grad_clip),
    },
  };
  return [`# trainer: ${resolveTrainerSettings(view).line}`];
}

/** Status notifications without the config object (the dashboard shows the YAML from `status`). */
function withoutConfig<T extends object>(r: T): Omit<T, 'config'> {
  const { config: _drop, ...rest } = r as T & { config?: unknown };
  return rest;
}

let current: TypedPanel<DashboardRequests, DashboardNotifications> | undefined;

export function dashboardHandlers(s: Services): Handlers<DashboardRequests> {
  return {
    runs: async () => s.client.request('runs/list', {}),
    status: async (p) => {
      const r = await s.client.request('runs/status', p);
      // The registry's step is the last checkpoint's; the Runs view knows the live one.
      const live = s.state.runs.find((x) => x.id === r.id)?.step;
      const step = live !== undefined && live > (r.step ?? -1) ? live : r.step;
      return {
        ...r,
        ...(step !== undefined ? { step } : {}),
        ...(r.config !== undefined ? { config: configYaml(r.config, r.configPath, r.model) } : {}),
      };
    },
    metrics: async (p) => s.client.request('runs/metrics', p),
    // taskset '': the run's held-out split with the run's reward; with a progress notification and
    // the result / failure as a toast, as from the palette (commands/evaluate.ts).
    evaluate: async (p) => {
      const run = s.state.runs.find((r) => r.id === p.runId);
      const ck = run?.checkpoints?.find((c) => c.path === p.checkpoint);
      const r = await evaluateWithProgress(
        s,
        {
          path: p.checkpoint,
          runId: p.runId,
          runName: run?.name ?? p.runId,
          ...(ck ? { version: ck.version, step: ck.step ?? ck.version } : {}),
        },
        { taskset: '', on: 'the held-out split' },
      );
      if ('error' in r) throw r.error;
      return r;
    },
    // As the commands do: `stopping…` in the Runs view, a progress notification, a failure as a toast.
    stop: async (p) => (await stopTraining(s, p.runId), null),
    pause: async (p) => (await pauseTraining(s, p.runId), null),
    resume: async (p) => (await s.client.request('runs/resume', p), null),
  };
}

export async function openDashboard(
  s: Services,
  runId?: string,
  restored?: vscode.WebviewPanel,
): Promise<TypedPanel<DashboardRequests, DashboardNotifications>> {
  const id = runId ?? s.state.activeRun?.id ?? s.state.runs[0]?.id;
  if (current && !restored) {
    current.panel.reveal();
    if (id) current.notify('select', { runId: id });
    return current;
  }
  current?.dispose();
  const p = new TypedPanel<DashboardRequests, DashboardNotifications>(
    s.context.extensionUri,
    'rftStudio.dashboard',
    'RFT Dashboard',
    'dashboard',
    dashboardHandlers(s),
    undefined,
    restored,
  );
  current = p;
  const subs = [
    s.client.onNotification('run/metrics', (m) => p.notify('metrics', m)),
    s.client.onNotification('run/status', (r) => p.notify('status', withoutConfig(r))),
  ];
  p.onDispose = () => {
    for (const x of subs) x.dispose();
    if (current === p) current = undefined;
  };
  void p.ready.then(() => id && p.notify('select', { runId: id }));
  return p;
}
