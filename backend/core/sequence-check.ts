// What the trainer can train on, in one place: the door (feedback: add / promote an expert) and the
// trainer's own screening of each sampled batch ask the same question, so an experience the editor
// accepted is one the trainer can use, and one it cannot is skipped there instead of killing the run.
import type { Experience } from './types.js';

export interface SequenceLimits {
  /** The model's context length: prompt + response tokens must fit. */
  maxSeqLen?: number;
  /** Token ids must be below this. */
  vocabSize?: number;
}

type Checked = Pick<Experience, 'promptTokens' | 'responseTokens' | 'actionMask'> &
  Partial<Pick<Experience, 'status' | 'feedback' | 'split'>>;

/** Why `e` cannot be trained on, or null when it can. */
export function sequenceProblem(e: Checked, lim: SequenceLimits = {}): string | null {
  if (e.feedback?.rejected) return 'rejected by a person';
  if (e.status !== undefined && e.status !== 'ok') return `status is '${e.status}'`;
  if (e.split === 'eval') return 'an eval-split experience';
  const P = e.promptTokens.length;
  const R = e.responseTokens.length;
  if (P === 0) return 'the prompt has no tokens (it needs at least the bos token)';
  if (R === 0) return 'the response has no tokens';
  if (e.actionMask.length !== R) return `actionMask has ${e.actionMask.length} entries for ${R} response tokens`;
  if (lim.maxSeqLen !== undefined && P + R > lim.maxSeqLen) {
    return `prompt (${P} tokens) + response (${R} tokens) = ${P + R} tokens, more than the model's max_seq_len ${lim.maxSeqLen} (shorten it by ${P + R - lim.maxSeqLen} tokens)`;
  }
  if (lim.vocabSize !== undefined) {
    const bad = [...e.promptTokens, ...e.responseTokens].find(
      (t) => !Number.isInteger(t) || t < 0 || t >= lim.vocabSize!,
    );
    if (bad !== undefined) return `token id ${bad} is outside the model's vocabulary (size ${lim.vocabSize})`;
  }
  return null;
}

/** Splits a batch into what can be trained on and what is skipped, with the reason per skipped id. */
export function screenBatch<E extends Checked & { id: string }>(
  exps: E[],
  lim: SequenceLimits,
): { keep: E[]; skipped: { id: string; reason: string }[] } {
  const keep: E[] = [];
  const skipped: { id: string; reason: string }[] = [];
  for (const e of exps) {
    const why = sequenceProblem(e, lim);
    if (why) skipped.push({ id: e.id, reason: why });
    else keep.push(e);
  }
  return { keep, skipped };
}
