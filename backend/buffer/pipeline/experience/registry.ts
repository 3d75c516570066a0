// Experience pipeline operators by name; a new operator is one file plus one entry in the map below.
import { Registry } from '../../../core/registry.js';
import type { OperatorSpec } from '../task/operator-spec.js';
import { advantage } from './advantage.js';
import { lengthReward } from './length-reward.js';
import { long2short } from './long2short.js';
import { rewardFilter } from './reward-filter.js';
import { rewardShaping } from './reward-shaping.js';
import type { ExperienceOperator, ExperiencePipelineDeps } from './types.js';
import { validity } from './validity.js';

export const experienceOperators = new Registry<OperatorSpec<ExperienceOperator, ExperiencePipelineDeps>>(
  'experience pipeline operator',
  {
    validity: validity,
    reward_filter: rewardFilter,
    reward_shaping: rewardShaping,
    length_reward: lengthReward,
    long2short: long2short,
    advantage: advantage,
  },
);
