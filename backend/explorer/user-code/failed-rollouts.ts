// What a workflow from workflow.file that failed (threw, ended its thread, passed its time limit,
// returned malformed experiences) leaves in the buffer: one `infra_failure` row per sample it was
// asked for, with the reason. Counted like any infra failure and never trained on (never a 0 reward
// that looks like the model's).
import type { Experience, Task } from '../../core/types.js';
import { encodePrompt, taskMessages } from '../../model/chat.js';
import { newExperienceId, type WorkflowContext } from '../workflow.js';

export function failedRollouts(tasks: Task[], ctx: WorkflowContext, reason: string): Experience[] {
  const now = Date.now();
  const out: Experience[] = [];
  for (const task of tasks) {
    let prompt: number[] = [];
    try {
      prompt = encodePrompt(ctx.model.tokenizer, task.messages ?? taskMessages(task.prompt ?? ''));
    } catch {
      // The reason is what matters; a prompt the tokenizer refuses is left empty.
    }
    for (let r = 0; r < ctx.repeatTimes; r++) {
      out.push({
        id: newExperienceId(),
        taskId: task.id,
        groupId: `${ctx.runId}:${ctx.split}:${ctx.step}:${task.id}`,
        runId: ctx.runId,
        source: 'usual',
        promptTokens: prompt,
        promptText: task.prompt ?? (task.messages ?? []).map((m) => m.content).join('\n'),
        responseTokens: [],
        responseText: '',
        actionMask: [],
        logprobs: [],
        modelVersion: ctx.model.version,
        reward: 0,
        status: 'infra_failure',
        statusReason: reason,
        useCount: 0,
        createdAt: now,
        split: ctx.split,
      });
    }
  }
  return out;
}
