// A stage's guards over its train records, the same in every placement: the collapse guard (a policy
// driven far from its reference, trainer/collapse-guard.ts) and the stall guard (a flat reward while
// the updates keep moving the policy, trainer/stall-guard.ts). Each says its warning once per stage,
// in the log and as a `warning` record (summary, report, dashboard, editor).
import type { RunConfig } from '../core/config.js';
import { logger } from '../core/log.js';
import type { RunWarning } from '../core/protocol.js';
import { resolveTrainerSettings } from '../core/trainer-defaults.js';
import { CollapseGuard } from '../trainer/collapse-guard.js';
import { StallGuard } from '../trainer/stall-guard.js';
import type { MetricsLog } from './monitor.js';

const log = logger('coordinator');

/** Observes each record of the stage; the warnings it gives are logged and written through `sink`. */
export function stageGuards(
  cfg: RunConfig,
  stage: { name: string; lr?: number | 'auto' },
  metrics: Pick<MetricsLog, 'read'>,
  sink: (rec: Record<string, unknown>) => void,
): (rec: Record<string, unknown>) => void {
  const history = metrics.read().filter((x) => x.stage === stage.name && (x.kind === 'train' || x.kind === 'warning'));
  const guards = [collapseGuard(cfg, stage, history), new StallGuard(stage.name, history)];
  return (rec) => {
    if (rec.kind !== 'train') return;
    for (const g of guards) {
      const w: RunWarning | undefined = g.observe(rec);
      if (!w) continue;
      log.warn(w.message);
      sink({ kind: 'warning', ...w });
    }
  };
}

/** The stage's collapse guard, told where its lr came from and what to set instead. */
function collapseGuard(
  cfg: RunConfig,
  stage: { name: string; lr?: number | 'auto' },
  history: Record<string, unknown>[],
): CollapseGuard {
  const t = resolveTrainerSettings(cfg, stage.lr);
  const field = stage.lr !== undefined ? `the stage's lr (stages[].lr of ${stage.name})` : 'trainer.lr';
  const source =
    stage.lr !== undefined
      ? `stages[].lr of ${stage.name}`
      : t.defaulted.includes('lr')
        ? `the default of a ${t.kind === 'scratch' ? 'model trained from scratch' : t.kind === 'pretrained-lora' ? 'pretrained checkpoint with LoRA' : 'pretrained checkpoint'}`
        : 'trainer.lr';
  const advice = t.auto
    ? `set a fixed ${field} below the lr auto reached, and check that the reward does not pay for degenerate answers`
    : `lower ${field}, or set it to auto (the default for a pretrained checkpoint): the lr is then set by how much each update changes the policy`;
  return new CollapseGuard({ stage: stage.name, lr: t.auto ? 'auto' : t.lr, lrSource: source, advice }, history);
}
