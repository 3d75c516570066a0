// Built-in reward functions register themselves on import; `rewardFns.get(name)` finds one.
export { rewardFns, badTask } from './registry.js';
import './exact_match.js';
import './math_answer.js';
import './countdown.js';
import './k12.js';
import './code_tests.js';
