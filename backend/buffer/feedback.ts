// Human feedback on buffer experiences: rate, reject, promote to expert (optionally with an edited
// response), add a hand-written expert example. Every change is one atomic store mutation with a row in
// the append-only feedback_log (who, when, what, before/after), and `undo(logId)` reverts exactly that
// change, refusing (ConflictError) when the experience has changed since.
import { randomUUID } from 'node:crypto';
import type { Experience, ExperienceSource, Feedback } from '../core/types.js';
import { ConflictError, InputError } from '../core/errors.js';
import { sequenceProblem, type SequenceLimits } from '../core/sequence-check.js';
import type { ExperienceStore, FeedbackAction, FeedbackLogEntry, FeedbackMutation } from './storage/types.js';

/** Text to token ids, e.g. `(t) => tokenizer.encode(t)`. */
export type Tokenize = (text: string) => number[];

/**
 * How a hand-written example becomes tokens, in the chat layout the explorer and the trainer use
 * (prompt: bos + turns + assistant marker; response: text + end marker), and the model's limits it
 * must fit. A bare Tokenize encodes both texts as they are and checks nothing but tokenisability.
 */
export interface ExpertEncoding {
  prompt(text: string): number[];
  response(text: string): number[];
  limits?: SequenceLimits;
}

/** Refuses, at the door, what the trainer could not train on (it would otherwise be skipped there). */
function mustFit(
  e: Pick<Experience, 'promptTokens' | 'responseTokens' | 'actionMask'>,
  limits: SequenceLimits | undefined,
  what: string,
): void {
  const why = sequenceProblem(e, limits);
  if (why) throw new InputError(`${what} cannot be trained on: ${why}`, { field: 'response' });
}

const DONE: Partial<Record<FeedbackAction, string>> = {
  rate: 'rated',
  reject: 'rejected',
  unreject: 'unrejected',
  promote: 'promoted',
};

/** What a log row's before/after hold: an experience's curation state, or a whole experience (created / deleted). */
type Snapshot =
  | { kind: 'state'; source: ExperienceSource; feedback: Feedback | null }
  | { kind: 'experience'; experience: Experience }
  | null;

export interface PromoteOptions {
  /** Edited response text: creates the expert from it, re-tokenised, with no log-probs and model version -1. */
  editedResponse?: string;
  tokenize?: Tokenize;
  /** The model's limits: the edited expert must fit them. */
  limits?: SequenceLimits;
  /** Reward recorded on the expert copy; default: the original's reward, or 1 for an edited response. */
  reward?: number;
  note?: string;
}

export interface ExpertExample {
  runId: string;
  taskId: string;
  prompt: string;
  response: string;
  groupId?: string;
  reward?: number;
  metadata?: Record<string, unknown>;
}

export class FeedbackService {
  constructor(
    private readonly store: ExperienceStore,
    private readonly now: () => number = Date.now,
  ) {}

  async rate(id: string, rating: number, who: string, note?: string): Promise<number> {
    if (!Number.isFinite(rating)) throw new InputError(`rating must be a finite number, got ${rating}`);
    return this.changeState(id, who, 'rate', (fb) => ({ ...fb, rating, ...(note !== undefined ? { note } : {}) }));
  }

  async reject(id: string, who: string, note?: string): Promise<number> {
    return this.changeState(id, who, 'reject', (fb) => ({
      ...fb,
      rejected: true,
      ...(note !== undefined ? { note } : {}),
    }));
  }

  async unreject(id: string, who: string): Promise<number> {
    return this.changeState(id, who, 'unreject', (fb) => {
      const { rejected: _r, ...rest } = fb;
      return rest;
    });
  }

  /** A new expert experience from a usual one; the original stays as it is. */
  async promote(id: string, who: string, opts: PromoteOptions = {}): Promise<{ logId: number; expert: Experience }> {
    const orig = await this.mustGetFinished(id, 'promote');
    if (orig.source !== 'usual') throw new ConflictError(`experience '${id}' is already an expert experience`);
    const at = this.now();
    const base = {
      id: `${orig.id}~expert~${randomUUID().slice(0, 8)}`,
      taskId: orig.taskId,
      groupId: orig.groupId,
      runId: orig.runId,
      source: 'expert' as const,
      promptTokens: orig.promptTokens,
      promptText: orig.promptText,
      status: 'ok' as const,
      useCount: 0,
      createdAt: at,
      metadata: { ...(orig.metadata ?? {}), promotedFrom: orig.id },
    };
    let expert: Experience;
    if (opts.editedResponse !== undefined) {
      if (!opts.tokenize) throw new Error('promote with an edited response needs a tokenize function');
      const tokens = opts.tokenize(opts.editedResponse);
      expert = {
        ...base,
        responseTokens: tokens,
        responseText: opts.editedResponse,
        actionMask: tokens.map(() => 1),
        logprobs: [],
        modelVersion: -1,
        reward: opts.reward ?? 1,
        feedback: { editedFrom: orig.id, by: who, at, ...(opts.note !== undefined ? { note: opts.note } : {}) },
      };
      mustFit(expert, opts.limits, 'the edited response');
    } else {
      if (orig.status !== 'ok')
        throw new InputError(
          `experience '${id}' has status ${orig.status}: promote it with an edited response instead`,
        );
      expert = {
        ...base,
        responseTokens: orig.responseTokens,
        responseText: orig.responseText,
        actionMask: orig.actionMask,
        logprobs: orig.logprobs,
        modelVersion: orig.modelVersion,
        reward: opts.reward ?? orig.reward,
        feedback: { by: who, at, ...(opts.note !== undefined ? { note: opts.note } : {}) },
      };
    }
    const logId = await this.store.mutate({
      log: {
        experienceId: expert.id,
        who,
        at,
        action: 'promote',
        before: null,
        after: { kind: 'experience', experience: expert } satisfies Snapshot,
        undoes: null,
      },
      insert: expert,
    });
    return { logId, expert };
  }

  /** A hand-written expert example (prompt + response text, tokenised here). */
  async addExpert(
    ex: ExpertExample,
    encoding: Tokenize | ExpertEncoding,
    who: string,
  ): Promise<{ logId: number; expert: Experience }> {
    const at = this.now();
    const enc: ExpertEncoding = typeof encoding === 'function' ? { prompt: encoding, response: encoding } : encoding;
    let responseTokens: number[];
    let promptTokens: number[];
    try {
      promptTokens = enc.prompt(ex.prompt);
      responseTokens = enc.response(ex.response);
    } catch (err) {
      throw new InputError(
        `the expert example cannot be tokenised: ${err instanceof Error ? err.message : String(err)}`,
        { field: 'response' },
      );
    }
    // Named by its task (a short hash keeps several for one task apart), not by a bare UUID.
    const id = `expert~${ex.taskId.slice(0, 64)}~${randomUUID().slice(0, 8)}`;
    const expert: Experience = {
      id,
      taskId: ex.taskId,
      groupId: ex.groupId ?? id,
      runId: ex.runId,
      source: 'expert',
      promptTokens,
      promptText: ex.prompt,
      responseTokens,
      responseText: ex.response,
      actionMask: responseTokens.map(() => 1),
      logprobs: [],
      modelVersion: -1,
      reward: ex.reward ?? 1,
      status: 'ok',
      useCount: 0,
      createdAt: at,
      feedback: { by: who, at },
      ...(ex.metadata ? { metadata: ex.metadata } : {}),
    };
    mustFit(expert, enc.limits, 'the expert example');
    const logId = await this.store.mutate({
      log: {
        experienceId: id,
        who,
        at,
        action: 'add_expert',
        before: null,
        after: { kind: 'experience', experience: expert } satisfies Snapshot,
        undoes: null,
      },
      insert: expert,
    });
    return { logId, expert };
  }

  /** Reverts exactly the change logged as `logId` (an undo can itself be undone). */
  async undo(logId: number, who: string): Promise<number> {
    const entry = await this.store.feedbackEntry(logId);
    if (!entry) throw new InputError(`no feedback log entry ${logId}`);
    if (entry.undoneBy !== null) throw new ConflictError(`feedback ${logId} was already undone by ${entry.undoneBy}`);
    const before = entry.before as Snapshot;
    const after = entry.after as Snapshot;
    const m: FeedbackMutation = {
      log: {
        experienceId: entry.experienceId,
        who,
        at: this.now(),
        action: 'undo',
        before: after,
        after: before,
        undoes: logId,
      },
      markUndone: logId,
    };
    if (before?.kind === 'state' && after?.kind === 'state') {
      m.update = {
        id: entry.experienceId,
        expect: { source: after.source, feedback: after.feedback },
        set: { source: before.source, feedback: before.feedback },
      };
    } else if (before === null && after?.kind === 'experience') {
      m.delete = { id: after.experience.id, expect: after.experience };
    } else if (before?.kind === 'experience' && after === null) {
      m.insert = before.experience;
    } else throw new Error(`feedback ${logId}: cannot undo a '${entry.action}' entry of this shape`);
    return this.store.mutate(m);
  }

  async history(experienceId: string, limit = 100): Promise<FeedbackLogEntry[]> {
    return this.store.feedbackLog({ experienceId, limit });
  }

  private async changeState(
    id: string,
    who: string,
    action: FeedbackAction,
    f: (fb: Feedback) => Feedback,
  ): Promise<number> {
    const e = await this.mustGetFinished(id, action);
    const at = this.now();
    const cur = e.feedback ?? null;
    const next: Feedback = { ...f({ ...(cur ?? {}) }), by: who, at };
    return this.store.mutate({
      log: {
        experienceId: id,
        who,
        at,
        action,
        before: { kind: 'state', source: e.source, feedback: cur } satisfies Snapshot,
        after: { kind: 'state', source: e.source, feedback: next } satisfies Snapshot,
        undoes: null,
      },
      // Guarded by what was read: a concurrent edit from another window makes this fail, not overwrite.
      update: { id, expect: { source: e.source, feedback: cur }, set: { source: e.source, feedback: next } },
    });
  }

  /**
   * A `partial` row (partial rollouts) is an unfinished trajectory, or a sample waiting for the rest of
   * its group: not an experience yet. Its rollout rewrites or deletes it, so curation would be lost or
   * would break the group's continuation (the explorer then drops the group).
   */
  private async mustGetFinished(id: string, action: FeedbackAction): Promise<Experience> {
    const e = await this.mustGet(id);
    if (e.status === 'partial')
      throw new ConflictError(
        `experience '${id}' is a partial row (its group is still being rolled out): not an experience yet, so it cannot be ${DONE[action] ?? action}; wait until its group is finished`,
      );
    return e;
  }

  private async mustGet(id: string): Promise<Experience> {
    const e = await this.store.get(id);
    if (!e) throw new InputError(`no experience '${id}'`);
    return e;
  }
}
