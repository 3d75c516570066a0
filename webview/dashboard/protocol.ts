// Typed messages of the training dashboard webview (webview <-> extension host).
import type { ComponentState, MetricsPoint, RunInfo } from '../../backend/core/protocol.js';

export interface DashboardRequests {
  runs: { params: Record<string, never>; result: RunInfo[] };
  status: { params: { runId: string }; result: RunInfo & { components?: ComponentState[]; config?: unknown } };
  metrics: { params: { runId: string; sinceStep?: number }; result: MetricsPoint[] };
  evaluate: { params: { runId: string; checkpoint: string }; result: { accuracy: number; tasks: number } };
  stop: { params: { runId: string }; result: null };
  pause: { params: { runId: string }; result: null };
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

export interface ChartSpec {
  title: string;
  keys: string[];
  /** y axis title (x is always the trainer step). */
  yTitle: string;
  /** Legend names per key. */
  labels?: Record<string, string>;
  /** Offer a log-scale toggle (values > 0 only). */
  log?: boolean;
  /** Said when the run has points but none for this chart. */
  absent?: string;
  /** Keys drawn dashed, on top (a total that can equal a part). */
  dashed?: string[];
}

/** Charts the dashboard draws, each from one or more metric keys. */
export const CHARTS: ChartSpec[] = [
  { title: 'Reward', keys: ['reward'], yTitle: 'mean reward', labels: { reward: 'rollout reward' } },
  {
    title: 'Eval accuracy',
    keys: ['eval_accuracy'],
    yTitle: 'accuracy',
    labels: { eval_accuracy: 'held-out accuracy' },
    absent: 'no evaluation yet',
  },
  {
    title: 'Losses',
    keys: ['loss/total', 'loss/policy', 'loss/sft', 'loss/critic'],
    yTitle: 'loss',
    labels: { 'loss/total': 'total', 'loss/policy': 'policy', 'loss/sft': 'SFT', 'loss/critic': 'critic (value)' },
    log: true,
    dashed: ['loss/total'],
  },
  {
    title: 'KL',
    keys: ['kl'],
    yTitle: 'KL',
    labels: { kl: 'KL to reference' },
    log: true,
    absent: 'not recorded: no KL term',
  },
  {
    title: 'Entropy',
    keys: ['entropy'],
    yTitle: 'nats / token',
    labels: { entropy: 'policy entropy' },
    absent: 'not recorded by this algorithm',
  },
  {
    // trainer.lr: auto moves the lr to keep the update KL (policy before vs after each step) in its band.
    title: 'Step size',
    keys: ['lr', 'update_kl', 'update_kl_target'],
    yTitle: 'lr; KL per token',
    labels: { lr: 'learning rate', update_kl: 'update KL', update_kl_target: 'update KL target (lr auto)' },
    log: true,
    dashed: ['update_kl_target'],
  },
  {
    title: 'Zero-variance groups',
    keys: ['zero_variance_share'],
    yTitle: 'share of groups',
    labels: { zero_variance_share: 'groups whose rewards all agree (no signal)' },
    absent: 'no rollout groups trained',
  },
  { title: 'Tokens / s', keys: ['tokens_per_s'], yTitle: 'tokens / s', labels: { tokens_per_s: 'trainer throughput' } },
  {
    title: 'Idle fraction',
    keys: ['idle/explorer', 'idle/trainer'],
    yTitle: 'fraction idle',
    labels: { 'idle/explorer': 'explorer', 'idle/trainer': 'trainer' },
  },
];
