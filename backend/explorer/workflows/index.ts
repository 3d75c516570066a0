// The workflow registry: the built-in workflows by name, plus workflows the user's workspace code
// registers at run time (workflow.file). A new built-in is one file plus one entry here.
import { Registry } from '../../core/registry.js';
import type { Workflow } from '../workflow.js';
import { multiTurn } from './multi_turn.js';
import { singleTurn } from './single_turn.js';
import { visionWorkflow } from './vision.js';

const builtinWorkflows = {
  single_turn: singleTurn,
  multi_turn: multiTurn,
  vision: visionWorkflow,
} as const satisfies Record<string, Workflow>;

export const workflows = new Registry<Workflow>('workflow', builtinWorkflows);
