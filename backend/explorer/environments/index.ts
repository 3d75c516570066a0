// Built-in environments register themselves on import.
export { environments, type Environment, type EnvSession } from './registry.js';
import './guess.js';
