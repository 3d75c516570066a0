// The environment registry: the built-in environments by name, plus environments the user's
// workspace code registers at run time. A new built-in is one file plus one entry here.
import { Registry } from '../../core/registry.js';
import { guessEnvironment } from './guess.js';
import type { Environment } from './registry.js';

export type { Environment, EnvSession } from './registry.js';

const builtinEnvironments = { guess: guessEnvironment } as const satisfies Record<string, Environment>;

export const environments = new Registry<Environment>('environment', builtinEnvironments);
