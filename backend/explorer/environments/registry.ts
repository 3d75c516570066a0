// Environments of multi-turn workflows: the model acts (one assistant turn), the environment
// answers with an observation and a reward, until it says the episode is done. Each environment
// is one file plus one entry in ./index.ts; `task.metadata.environment` names the one a task uses.
import type { Task } from '../../core/types.js';

export interface EnvStep {
  /** What the environment says back (shown to the model as an environment turn); absent when done. */
  observation?: string;
  /** Reward for this action; the episode's reward is the sum. */
  reward: number;
  done: boolean;
  info?: Record<string, number | string | boolean>;
}

export interface EnvSession {
  step(action: string): EnvStep;
}

export interface Environment {
  readonly name: string;
  /** A fresh episode for one task (tasks carry their seed/secret in metadata, so episodes are reproducible). */
  create(task: Task): EnvSession;
}
