// Built-in environments register themselves on import.
export { environments, type Environment, type EnvSession, type EnvStep } from './registry.js';
import './guess.js';
