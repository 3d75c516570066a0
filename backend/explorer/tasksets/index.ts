// The built-in taskset generators by name. A new one is one file plus one entry here.
import { Registry } from '../../core/registry.js';
import { arithTaskset } from './arith.js';
import type { BuiltinTaskset } from './builtin.js';
import { codeTaskset } from './code.js';
import { countdownTaskset } from './countdown.js';
import { guessTaskset } from './guess.js';
import { k12Taskset } from './k12.js';
import { reverseTaskset } from './reverse.js';
import { visionTaskset } from './vision.js';

const tasksets = {
  reverse: reverseTaskset,
  arith: arithTaskset,
  countdown: countdownTaskset,
  code: codeTaskset,
  k12: k12Taskset,
  guess: guessTaskset,
  vision: visionTaskset,
} as const satisfies Record<string, BuiltinTaskset>;

export const builtinTasksets = new Registry<BuiltinTaskset>('built-in taskset', tasksets);
