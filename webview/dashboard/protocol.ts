// Typed messages of the training dashboard webview (webview <-> extension host).
import type { ComponentState, MetricsPoint, RunInfo } from '../../backend/core/protocol.js';

export const VIEW_TYPE = 'rftStudio.dashboard';

export interface DashboardRequests {
  runs: { params: Record<string, never>; result: RunInfo[] };
  status: { params: { runId: string }; result: RunInfo & { components?: ComponentState[]; config?: unknown } };
  metrics: { params: { runId: string; sinceStep?: number }; result: MetricsPoint[] };
  evaluate: { params: { runId: string; checkpoint: string }; result: { accuracy: number; tasks: number } };
  stop: { params: { runId: string }; result: null };
  resume: { params: { runId: string }; result: null };
}

export interface DashboardNotifications {
  metrics: MetricsPoint;
  status: RunInfo & { components?: ComponentState[] };
  select: { runId: string };
}

export interface DashboardState {
  runId?: string;
}

/** Charts the dashboard draws, each from one or more metric keys. */
export const CHARTS: { title: string; keys: string[] }[] = [
  { title: 'Reward', keys: ['reward'] },
  { title: 'Eval accuracy', keys: ['eval_accuracy'] },
  { title: 'Losses', keys: ['loss/total', 'loss/policy', 'loss/sft'] },
  { title: 'KL', keys: ['kl'] },
  { title: 'Entropy', keys: ['entropy'] },
  { title: 'Tokens / s', keys: ['tokens_per_s'] },
  { title: 'Idle fraction', keys: ['idle/explorer', 'idle/trainer'] },
];
