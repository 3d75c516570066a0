// The reward-function registry: name -> (task, responseText, ctx) => RewardResult, plus reward code
// the user's workspace registers at run time. A new built-in is one file plus one entry here.
import { Registry } from '../../core/registry.js';
import type { RewardFn } from '../workflow.js';
import { codeTests } from './code_tests.js';
import { countdown } from './countdown.js';
import { exactMatch } from './exact_match.js';
import { k12 } from './k12.js';
import { mathAnswer } from './math_answer.js';

const builtinRewards = {
  exact_match: exactMatch,
  math_answer: mathAnswer,
  countdown,
  k12,
  code_tests: codeTests,
} as const satisfies Record<string, RewardFn>;

export const rewardFns = new Registry<RewardFn>('reward function', builtinRewards);
