// Drop tasks whose normalised prompt (or id) was seen before; the first one is kept.
import { z } from 'zod';
import type { OperatorSpec } from './operator-spec.js';
import { taskText } from './text.js';
import type { TaskOperator, TaskPipelineDeps } from './types.js';

export const normalisePrompt = (s: string): string => s.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();

export const dedupe: OperatorSpec<TaskOperator, TaskPipelineDeps> = {
  summary: 'drop repeated tasks (same normalised prompt, or same id)',
  params: z.object({ by: z.enum(['prompt', 'id']).default('prompt') }).strict(),
  create: (p: { by: 'prompt' | 'id' }) => ({
    apply(tasks) {
      const seen = new Set<string>();
      return tasks.filter((t) => {
        const key = p.by === 'id' ? t.id : normalisePrompt(taskText(t));
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      });
    },
  }),
};
