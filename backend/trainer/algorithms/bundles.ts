// Algorithms as named bundles of units: which advantage function, policy loss (+ params), KL (as a
// loss or a reward penalty), entropy bonus and aggregation; whether a reference model and a critic
// are needed; and how a batch is sampled (MIX / CHORD: the expert share of the batch).
// Defaults follow the reference framework: clip 0.2, dual clip 3, KL k2 coef 0.001 as a loss,
// entropy coef 0, token-mean, MIX expert ratio 0.5 and mu 0.1.
import { InputError } from '../../core/errors.js';
import { Registry } from '../../core/registry.js';
import { advantageFns } from './advantage/index.js';
import { assertAggMode } from './aggregate.js';
import { klFns } from './kl/index.js';
import { policyLosses } from './policy_loss/index.js';
import { toCamel } from './params.js';
import type { AggMode } from './types.js';

export type Params = Record<string, number | string | boolean | null>;

export interface KlSetting {
  fn: string;
  coef: number;
  /** 'loss': kl_coef·AGG(kl) added to the actor loss; 'reward': subtracted from token rewards before advantages. */
  as: 'loss' | 'reward';
}

export interface AlgorithmBundle {
  name: string;
  description: string;
  /** null: the data carries no advantages (SFT, DPO). */
  advantage: { fn: string; params: Params } | null;
  policyLoss: { fn: string; params: Params };
  /** null: no KL term. */
  kl: KlSetting | null;
  entropyCoef: number;
  /** 'mix': entropy over usual rows only. */
  entropyLossFn: 'default' | 'mix';
  /** Shared by the policy loss, the KL loss and the entropy term. */
  lossAggMode: AggMode;
  needsReference: boolean;
  needsCritic: boolean;
  /** Recompute old log-probs with the current actor before the update instead of the behaviour ones. */
  needsOldLogprobs: boolean;
  sampling: {
    /** Share of each batch drawn from expert data: 0 usual only, 1 expert only. */
    expertRatio: number;
  };
  /** Rollouts per task (group size of group-relative advantages). */
  repeatTimes: number;
  /** Data the trainer reads: rollouts, SFT examples, or (chosen, rejected) pairs. */
  schema: 'experience' | 'sft' | 'dpo';
}

const K2: KlSetting = { fn: 'k2', coef: 0.001, as: 'loss' };

function define(b: AlgorithmBundle): AlgorithmBundle {
  validateBundle(b);
  return Object.freeze(b);
}

const rl = {
  entropyCoef: 0,
  entropyLossFn: 'default' as const,
  lossAggMode: 'token-mean' as const,
  needsCritic: false,
  needsOldLogprobs: false,
  sampling: { expertRatio: 0 },
  schema: 'experience' as const,
};

const sft = define({
  ...rl,
  name: 'sft',
  description: 'supervised fine-tuning on expert data',
  advantage: null,
  policyLoss: { fn: 'sft', params: {} },
  kl: null,
  needsReference: false,
  sampling: { expertRatio: 1 },
  repeatTimes: 1,
  schema: 'sft',
});
const grpo = define({
  ...rl,
  name: 'grpo',
  description: 'group-relative advantages with the PPO clipped loss and a k2 KL loss',
  advantage: { fn: 'grpo', params: {} },
  policyLoss: { fn: 'ppo', params: {} },
  kl: K2,
  needsReference: true,
  repeatTimes: 2,
});
const ppo = define({
  ...rl,
  name: 'ppo',
  description: 'PPO with a critic and GAE advantages',
  advantage: { fn: 'gae', params: {} },
  policyLoss: { fn: 'ppo', params: {} },
  kl: K2,
  needsReference: true,
  needsCritic: true,
  repeatTimes: 1,
});
const rloo = define({
  ...rl,
  name: 'rloo',
  description: 'leave-one-out baseline with the PPO clipped loss',
  advantage: { fn: 'rloo', params: {} },
  policyLoss: { fn: 'ppo', params: {} },
  kl: K2,
  needsReference: true,
  repeatTimes: 2,
});
const reinforcePp = define({
  ...rl,
  name: 'reinforce++',
  description: 'whitened discounted returns with the PPO clipped loss',
  advantage: { fn: 'reinforce++', params: {} },
  policyLoss: { fn: 'ppo', params: {} },
  kl: K2,
  needsReference: true,
  repeatTimes: 1,
});
const opmd = define({
  ...rl,
  name: 'opmd',
  description: 'online policy mirror descent (Kimi k1.5 style)',
  advantage: { fn: 'opmd', params: {} },
  policyLoss: { fn: 'opmd', params: {} },
  kl: K2,
  needsReference: true,
  repeatTimes: 2,
});
const mix = define({
  ...rl,
  name: 'mix',
  description: 'GRPO on rollouts + mu·SFT on expert data in the same batch',
  advantage: { fn: 'grpo', params: {} },
  policyLoss: { fn: 'mix', params: {} },
  kl: K2,
  entropyLossFn: 'mix',
  needsReference: true,
  sampling: { expertRatio: 0.5 },
  repeatTimes: 8,
});
const chord = define({
  ...rl,
  name: 'chord',
  description: 'MIX with a scheduled mu and phi-weighted SFT (CHORD)',
  advantage: { fn: 'grpo', params: {} },
  policyLoss: { fn: 'chord', params: {} },
  kl: K2,
  entropyLossFn: 'mix',
  needsReference: true,
  sampling: { expertRatio: 0.5 },
  repeatTimes: 8,
});
const dpo = define({
  ...rl,
  name: 'dpo',
  description: 'direct preference optimisation on (chosen, rejected) pairs',
  advantage: null,
  policyLoss: { fn: 'dpo', params: {} },
  // The reference framework insists on a KL loss for DPO (k2).
  kl: K2,
  needsReference: true,
  sampling: { expertRatio: 1 },
  repeatTimes: 2,
  schema: 'dpo',
});

/** The named bundles; a new algorithm is one more bundle above plus one entry here. */
const builtinAlgorithms = {
  sft,
  grpo,
  ppo,
  rloo,
  'reinforce++': reinforcePp,
  opmd,
  mix,
  chord,
  dpo,
} as const satisfies Record<string, AlgorithmBundle>;

export const algorithms = new Registry<AlgorithmBundle>('algorithm', builtinAlgorithms);

export function validateBundle(b: AlgorithmBundle): void {
  const where = `algorithm '${b.name}'`;
  if (b.advantage) advantageFns.get(b.advantage.fn);
  policyLosses.get(b.policyLoss.fn);
  if (b.kl) {
    klFns.get(b.kl.fn);
    if (b.kl.as !== 'loss' && b.kl.as !== 'reward') throw new InputError(`${where}: kl.as must be 'loss' or 'reward'`);
    if (!b.needsReference) throw new InputError(`${where}: a KL term needs the reference model`);
  }
  if (b.policyLoss.fn === 'dpo' && !b.needsReference) throw new InputError(`${where}: DPO needs the reference model`);
  if (b.advantage && advantageFns.get(b.advantage.fn).where === 'trainer' && !b.needsCritic) {
    throw new InputError(`${where}: advantage '${b.advantage.fn}' needs a critic`);
  }
  assertAggMode(b.lossAggMode);
  const r = b.sampling.expertRatio;
  if (!(r >= 0 && r <= 1)) throw new InputError(`${where}: sampling.expertRatio must be in [0, 1], got ${r}`);
  if (!(Number.isInteger(b.repeatTimes) && b.repeatTimes >= 1))
    throw new InputError(`${where}: repeatTimes must be an integer >= 1`);
}

/** What a run config may change on top of a named bundle (snake_case keys accepted in the params). */
export interface AlgorithmOverrides {
  advantageParams?: Params;
  policyLossParams?: Params;
  /** null turns the KL term off; a partial setting changes only its fields. */
  kl?: Partial<KlSetting> | null;
  entropyCoef?: number;
  lossAggMode?: AggMode;
  expertRatio?: number;
  repeatTimes?: number;
  needsOldLogprobs?: boolean;
}

/** A bundle with overrides applied and checked (unknown parameter names fail here, not mid-run). */
export function configureAlgorithm(name: string, o: AlgorithmOverrides = {}): AlgorithmBundle {
  const base = algorithms.get(name);
  const camel = (p?: Params): Params => Object.fromEntries(Object.entries(p ?? {}).map(([k, v]) => [toCamel(k), v]));
  const kl = o.kl === null ? null : o.kl ? { ...(base.kl ?? K2), ...o.kl } : base.kl;
  const b: AlgorithmBundle = {
    ...base,
    advantage: base.advantage
      ? { fn: base.advantage.fn, params: { ...base.advantage.params, ...camel(o.advantageParams) } }
      : null,
    policyLoss: { fn: base.policyLoss.fn, params: { ...base.policyLoss.params, ...camel(o.policyLossParams) } },
    kl,
    entropyCoef: o.entropyCoef ?? base.entropyCoef,
    lossAggMode: o.lossAggMode ?? base.lossAggMode,
    // The reference model is needed by a KL term or by a loss that reads reference log-probs (DPO).
    needsReference: kl !== null || policyLosses.get(base.policyLoss.fn).requires.includes('refLogprob'),
    needsOldLogprobs: o.needsOldLogprobs ?? base.needsOldLogprobs,
    sampling: { expertRatio: o.expertRatio ?? base.sampling.expertRatio },
    repeatTimes: o.repeatTimes ?? base.repeatTimes,
  };
  if (o.advantageParams && !b.advantage)
    throw new InputError(`algorithm '${name}' has no advantage function to take advantageParams`);
  validateBundle(b);
  // Resolve once so a typo in a parameter name fails at configuration time.
  if (b.advantage) {
    const fn = advantageFns.get(b.advantage.fn);
    checkKeys(`advantage '${fn.name}'`, fn.defaults, b.advantage.params);
  }
  checkKeys(`policy loss '${b.policyLoss.fn}'`, policyLosses.get(b.policyLoss.fn).defaults, b.policyLoss.params);
  return b;
}

function checkKeys(what: string, defaults: object, params: Params): void {
  for (const k of Object.keys(params)) {
    if (!(k in defaults))
      throw new InputError(`${what}: unknown parameter '${k}'; known: ${Object.keys(defaults).join(', ') || '(none)'}`);
  }
}

/** MIX sampling: ceil(ratio·B) expert rows, the rest usual. */
export function splitBatch(batchSize: number, expertRatio: number): { expert: number; usual: number } {
  if (!(Number.isInteger(batchSize) && batchSize >= 0))
    throw new Error(`batch size must be a non-negative integer, got ${batchSize}`);
  if (!(expertRatio >= 0 && expertRatio <= 1)) throw new Error(`expert ratio must be in [0, 1], got ${expertRatio}`);
  // Round first so 0.3·10 = 3.0000000000000004 does not become 4.
  const expert = Math.min(batchSize, Math.ceil(Number((expertRatio * batchSize).toFixed(9))));
  return { expert, usual: batchSize - expert };
}
