// Adapters from the reference fixture cases (shared/fixtures/algorithms.json, schema in its README)
// to the algorithm units: convert inputs, call the unit, return every output under the fixture's names.
import { tf, tidy } from '../../backend/model/engine.js';
import {
  advantageFns,
  entropyFromLogits,
  entropyLoss,
  klLoss,
  policyLosses,
  type LossResult,
} from '../../backend/trainer/algorithms/index.js';

export interface FixtureCase {
  id: string;
  fn: string;
  description?: string;
  params: Record<string, unknown>;
  inputs: Record<string, unknown>;
  expected: Record<string, unknown>;
}

export interface AdapterResult {
  actual: Record<string, unknown>;
  /** Which tolerance row applies: the pure-JS advantages compute in float64, tfjs in float32. */
  precision: 'float64' | 'float32';
  /** Per-token outputs computed on unmasked positions only: compare where this mask is 1. */
  unmaskedOnly?: { keys: string[]; mask: number[][] };
}

type Adapter = (c: FixtureCase) => AdapterResult;

const num2 = (x: unknown) => x as number[][];
const t2 = (x: unknown) => tf.tensor2d(x as number[][], undefined, 'float32');
const t1 = (x: unknown) => tf.tensor1d(x as number[], 'float32');

/** Tensors to nested plain arrays / numbers. */
function plain(v: unknown): unknown {
  if (v instanceof tf.Tensor) return v.rank === 0 ? v.dataSync()[0] : v.arraySync();
  return v;
}

function advantage(name: string): Adapter {
  return (c) => {
    const i = c.inputs;
    const out = advantageFns.get(name).compute(
      {
        rewards: i.rewards as number[] | undefined,
        groupIds: i.group_ids as string[] | undefined,
        actionMask: num2(i.action_mask),
        tokenLevelRewards: i.token_level_rewards as number[][] | undefined,
        values: i.values as number[][] | undefined,
      },
      c.params,
    );
    return {
      precision: 'float64',
      actual: {
        advantages: out.advantages,
        returns: out.returns,
        ...(out.scores ? { scores: out.scores } : {}),
        ...out.groupStats,
        ...out.metrics,
        ...out.extra,
      },
    };
  };
}

/** Loss results under the fixture's names: loss, every metric (also nested as `metrics`), every detail. */
function lossActual(r: LossResult): Record<string, unknown> {
  const metrics: Record<string, unknown> = { loss: plain(r.loss) };
  for (const [k, v] of Object.entries(r.metrics)) metrics[k] = plain(v);
  const details: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r.details ?? {})) details[k] = plain(v);
  return { ...metrics, ...details, metrics };
}

function policyLoss(name: string, perTokenKeys: string[]): Adapter {
  return (c) => {
    const i = c.inputs;
    const actual = tidy(() =>
      lossActual(
        policyLosses.get(name).compute(
          {
            logprob: t2(i.logprob),
            oldLogprob: i.old_logprob ? t2(i.old_logprob) : undefined,
            refLogprob: i.ref_logprob ? t2(i.ref_logprob) : undefined,
            advantages: i.advantages ? t2(i.advantages) : undefined,
            actionMask: t2(i.action_mask),
            expertMask: i.expert_mask ? t1(i.expert_mask) : undefined,
            step: typeof i.step === 'number' ? i.step : undefined,
          },
          c.params,
        ),
      ),
    );
    return { precision: 'float32', actual, unmaskedOnly: { keys: perTokenKeys, mask: num2(i.action_mask) } };
  };
}

function kl(name: string): Adapter {
  return (c) => {
    const i = c.inputs;
    const actual = tidy(() =>
      lossActual(
        klLoss(
          name,
          {
            logprob: t2(i.logprob),
            refLogprob: t2(i.ref_logprob),
            oldLogprob: i.old_logprob ? t2(i.old_logprob) : undefined,
            actionMask: t2(i.action_mask),
          },
          c.params,
        ),
      ),
    );
    return { precision: 'float32', actual, unmaskedOnly: { keys: ['kl'], mask: num2(i.action_mask) } };
  };
}

const entropy: Adapter = (c) => {
  const i = c.inputs;
  const { temperature, ...params } = c.params;
  const actual = tidy(() => {
    const mask = t2(i.action_mask);
    const H = entropyFromLogits(
      tf.tensor3d(i.logits as number[][][], undefined, 'float32'),
      (temperature as number | null) ?? 1,
      mask,
    );
    return lossActual(
      entropyLoss({ entropy: H, actionMask: mask, expertMask: i.expert_mask ? t1(i.expert_mask) : undefined }, params),
    );
  });
  return { precision: 'float32', actual, unmaskedOnly: { keys: ['entropy'], mask: num2(i.action_mask) } };
};

/** Fixture `fn` -> adapter. A case whose fn is missing here fails its test. */
export const ADAPTERS: Record<string, Adapter> = {
  grpo_advantage: advantage('grpo'),
  rloo_advantage: advantage('rloo'),
  opmd_advantage: advantage('opmd'),
  reinforce_pp_advantage: advantage('reinforce++'),
  gae: advantage('gae'),
  ppo_policy_loss: policyLoss('ppo', ['ratio', 'pg_losses']),
  sft_loss: policyLoss('sft', []),
  mix_loss: policyLoss('mix', []),
  opmd_loss: policyLoss('opmd', []),
  dpo_loss: policyLoss('dpo', []),
  kl_k1: kl('k1'),
  kl_k2: kl('k2'),
  kl_k3: kl('k3'),
  kl_low_var: kl('low_var_kl'),
  kl_abs: kl('abs'),
  kl_corrected_k3: kl('corrected_k3'),
  entropy_from_logits: entropy,
};
