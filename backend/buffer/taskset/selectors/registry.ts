// Task selectors by name; a new one is one file plus one entry in the map below.
import { Registry } from '../../../core/registry.js';
import type { Task } from '../../../core/types.js';
import { CurriculumSelector } from './curriculum.js';
import { PrioritySelector } from './priority.js';
import { RandomSelector } from './random.js';
import { SequentialSelector } from './sequential.js';
import { ShuffleSelector } from './shuffle.js';
import type { SelectorFactory, SelectorOptions, TaskSelector } from './types.js';

export const taskSelectors = new Registry<SelectorFactory>('task selector', {
  sequential: (tasks) => new SequentialSelector(tasks),
  shuffle: (tasks, o) => new ShuffleSelector(tasks, o.seed ?? 0),
  random: (tasks, o) => new RandomSelector(tasks, o.seed ?? 0),
  priority: (tasks, o) => new PrioritySelector(tasks, o),
  curriculum: (tasks, o) => new CurriculumSelector(tasks, o),
});

export function makeSelector(name: string, tasks: Task[], opts: SelectorOptions = {}): TaskSelector {
  return taskSelectors.get(name)(tasks, opts);
}
