// The text of a task that filters look at: its prompt, or its messages joined.
import type { Task } from '../../../core/types.js';

export function taskText(t: Task): string {
  return t.prompt ?? (t.messages ?? []).map((m) => m.content).join('\n');
}
