// Built-in taskset generators register themselves on import.
export { builtinTasksets } from './builtin.js';
import './reverse.js';
import './arith.js';
import './countdown.js';
import './code.js';
import './k12.js';
import './guess.js';
import './vision.js';
