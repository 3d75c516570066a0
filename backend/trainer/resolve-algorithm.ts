// From a run config's algorithm section to what the trainer loop and the experience pipeline use:
// the Objective (loss) and the group advantages of fresh experiences. Config params are flat
// (`mu`, `clip_range`, `expert_ratio`, `kl_coef`, ...) and routed to the unit that owns them.
import { InputError } from '../core/errors.js';
import type { Experience } from '../core/types.js';
import type { Objective } from './objective.js';
import {
  advantageFns,
  algorithms,
  buildObjective,
  configureAlgorithm,
  policyLosses,
  toCamel,
  type AlgorithmBundle,
  type AlgorithmOverrides,
  type Params,
} from './algorithms/index.js';

const TOP_LEVEL: Record<string, (o: AlgorithmOverrides, v: unknown) => void> = {
  expertRatio: (o, v) => (o.expertRatio = num('expert_ratio', v)),
  entropyCoef: (o, v) => (o.entropyCoef = num('entropy_coef', v)),
  repeatTimes: (o, v) => (o.repeatTimes = num('repeat_times', v)),
  lossAggMode: (o, v) => (o.lossAggMode = String(v) as AlgorithmOverrides['lossAggMode']),
  recomputeOldLogprobs: (o, v) => (o.needsOldLogprobs = Boolean(v)),
  kl: (o, v) => (o.kl = v === null || v === false ? null : (v as AlgorithmOverrides['kl'])),
  klCoef: (o, v) => (o.kl = o.kl === null ? null : { ...(o.kl ?? {}), coef: num('kl_coef', v) }),
  klFn: (o, v) => (o.kl = o.kl === null ? null : { ...(o.kl ?? {}), fn: String(v) }),
};

function num(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new InputError(`algorithm.params.${name}: expected a number, got ${JSON.stringify(v)}`);
  return v;
}

/** Named bundle + flat params -> a checked bundle; an unknown param names itself and the algorithm. */
export function resolveAlgorithm(name: string, params: Record<string, unknown> = {}): AlgorithmBundle {
  const base = algorithms.get(name);
  const o: AlgorithmOverrides = {};
  const pl: Params = {};
  const adv: Params = {};
  const plDefaults = policyLosses.get(base.policyLoss.fn).defaults as object;
  const advDefaults = base.advantage ? (advantageFns.get(base.advantage.fn).defaults as object) : {};
  for (const [key, value] of Object.entries(params)) {
    const k = toCamel(key);
    if (k in TOP_LEVEL) TOP_LEVEL[k]!(o, value);
    else if (k in plDefaults) pl[k] = value as Params[string];
    else if (k in advDefaults) adv[k] = value as Params[string];
    else
      throw new InputError(
        `algorithm '${name}': unknown parameter '${key}'; known: ${[...Object.keys(TOP_LEVEL), ...Object.keys(plDefaults), ...Object.keys(advDefaults)].join(', ')}`,
      );
  }
  if (Object.keys(pl).length) o.policyLossParams = pl;
  if (Object.keys(adv).length) o.advantageParams = adv;
  return configureAlgorithm(name, o);
}

export function makeObjective(name: string, params: Record<string, unknown> = {}): Objective {
  return buildObjective(resolveAlgorithm(name, params));
}

/**
 * Fill per-token advantages and returns of usual, ok experiences with the algorithm's advantage
 * function when it runs at experience time (GRPO, RLOO, OPMD, REINFORCE++). Infra failures and
 * invalid rows are left untouched (they are never trained on); expert rows need none.
 */
/** Whether the algorithm's advantages are computed in the experience pipeline (GRPO-style group
 * advantages); false when the trainer computes them (PPO's GAE needs the critic) or there are none (SFT, DPO). */
export function pipelineComputesAdvantages(name: string, params: Record<string, unknown> = {}): boolean {
  const b = resolveAlgorithm(name, params);
  return !!b.advantage && advantageFns.get(b.advantage.fn).where === 'pipeline';
}

export function groupAdvantages(name: string, exps: Experience[], params: Record<string, unknown> = {}): Experience[] {
  const b = resolveAlgorithm(name, params);
  if (!b.advantage) return exps;
  const fn = advantageFns.get(b.advantage.fn);
  if (fn.where !== 'pipeline') return exps;
  const rows = exps.filter((e) => e.source === 'usual' && e.status === 'ok');
  if (rows.length === 0) return exps;
  const mask = rows.map((e) => e.actionMask.map((m) => (m ? 1 : 0)));
  const out = fn.compute(
    {
      rewards: rows.map((e) => e.reward),
      groupIds: rows.map((e) => e.groupId),
      actionMask: mask,
      tokenLevelRewards: rows.map((e) =>
        e.responseTokens.map((_, j) => (j === e.responseTokens.length - 1 ? e.reward : 0)),
      ),
    },
    b.advantage.params,
  );
  rows.forEach((e, i) => {
    e.advantages = out.advantages[i]!;
    e.returns = out.returns[i]!;
  });
  return exps;
}
