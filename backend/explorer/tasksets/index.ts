// Built-in taskset generators register themselves on import.
export { builtinTasksets, type BuiltinTaskset } from './builtin.js';
import './reverse.js';
