// FeedbackPort over the buffer's FeedbackService: each change is one logged, undoable store
// mutation; ids of log rows are the change ids the editor keeps for Undo.
import { userInfo } from 'node:os';
import type { Experience } from '../../core/types.js';
import type { BulkPreview, ExperienceFilter, FeedbackChange } from '../../core/protocol.js';
import { FeedbackService, type ExpertEncoding } from '../../buffer/feedback.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../model/chat.js';
import type { ExperienceStore, FeedbackAction, FeedbackLogEntry } from '../../buffer/storage/types.js';
import type { FeedbackPort } from '../ports.js';
import { NotFoundError } from '../errors.js';
import type { RunTokenizers } from './run-tokenizers.js';

const KIND: Record<FeedbackAction, FeedbackChange['kind']> = {
  rate: 'rate',
  reject: 'reject',
  unreject: 'reject',
  promote: 'promote',
  add_expert: 'add-expert',
  undo: 'rate',
};
const BULK = 'bulk:';

function who(): string {
  try {
    return userInfo().username || 'editor';
  } catch {
    return 'editor';
  }
}

export class StoreFeedback implements FeedbackPort {
  private readonly service: FeedbackService;
  private readonly by = who();

  constructor(
    private readonly store: ExperienceStore,
    private readonly tokenizers: RunTokenizers,
  ) {
    this.service = new FeedbackService(store);
  }

  private change(logId: number, kind: FeedbackChange['kind'], ids: string[]): FeedbackChange {
    return { changeId: String(logId), kind, experienceIds: ids, at: Date.now() };
  }

  /** The chat layout the explorer and trainer use, and the run's model limits (checked at the door). */
  private async encodingFor(runId: string): Promise<ExpertEncoding> {
    const tok = await this.tokenizers.forRun(runId);
    if (!tok)
      throw new NotFoundError(
        `run '${runId}' has no tokenizer (no checkpoint with tokenizer.json, none beside the buffer): cannot tokenise the response`,
      );
    return {
      prompt: (t) => encodePrompt(tok, taskMessages(t)),
      response: (t) => encodeResponse(tok, t),
      limits: await this.tokenizers.limitsFor(runId),
    };
  }

  async rate(id: string, rating: number, note?: string): Promise<FeedbackChange> {
    return this.change(await this.service.rate(id, rating, this.by, note), 'rate', [id]);
  }

  async reject(id: string, note?: string): Promise<FeedbackChange> {
    return this.change(await this.service.reject(id, this.by, note), 'reject', [id]);
  }

  async promote(id: string, editedResponse?: string): Promise<FeedbackChange & { expertId: string }> {
    const e = await this.store.get(id);
    if (!e) throw new NotFoundError(`no experience '${id}'`);
    const enc = editedResponse !== undefined ? await this.encodingFor(e.runId) : undefined;
    const r = await this.service.promote(id, this.by, { editedResponse, tokenize: enc?.response, limits: enc?.limits });
    return { ...this.change(r.logId, 'promote', [id, r.expert.id]), expertId: r.expert.id };
  }

  async addExpert(
    taskId: string,
    prompt: string,
    response: string,
    runId?: string,
  ): Promise<FeedbackChange & { expertId: string }> {
    const run = runId ?? (await this.store.list({ limit: 1, sort: 'seq', desc: true }))[0]?.runId;
    if (!run) throw new NotFoundError('the buffer has no run yet: name the run of the expert example');
    const r = await this.service.addExpert(
      { runId: run, taskId, prompt, response },
      await this.encodingFor(run),
      this.by,
    );
    return { ...this.change(r.logId, 'add-expert', [r.expert.id]), expertId: r.expert.id };
  }

  /** Promotes the k best usual experiences of every task (ok, not rejected, not promoted before). */
  async bulkPromote(topK: number, filter: ExperienceFilter = {}): Promise<FeedbackChange> {
    const best = await this.bulkPick(topK, filter);
    const logIds: number[] = [];
    const ids: string[] = [];
    for (const list of best.values()) {
      for (const e of list) {
        const r = await this.service.promote(e.id, this.by);
        logIds.push(r.logId);
        ids.push(e.id, r.expert.id);
      }
    }
    return {
      changeId: BULK + logIds.join(','),
      kind: 'bulk-promote',
      experienceIds: ids,
      at: Date.now(),
      count: logIds.length,
    };
  }

  async bulkPreview(topK: number, filter: ExperienceFilter = {}): Promise<BulkPreview> {
    const picked = [...(await this.bulkPick(topK, filter)).values()].flat();
    const rewards = picked.map((e) => e.reward);
    return {
      count: picked.length,
      tasks: new Set(picked.map((e) => e.taskId)).size,
      minReward: rewards.length ? Math.min(...rewards) : null,
      maxReward: rewards.length ? Math.max(...rewards) : null,
    };
  }

  /** The k best usual experiences of every task matching `filter` (ok, not rejected, not promoted before). */
  private async bulkPick(topK: number, filter: ExperienceFilter): Promise<Map<string, Experience[]>> {
    const promoted = new Set<string>();
    for (let off = 0; ; off += 1000) {
      const experts = await this.store.list({ source: 'expert', offset: off, limit: 1000 });
      for (const x of experts) if (typeof x.metadata?.promotedFrom === 'string') promoted.add(x.metadata.promotedFrom);
      if (experts.length < 1000) break;
    }
    const best = new Map<string, Experience[]>();
    for (let off = 0; ; off += 1000) {
      const page = await this.store.list({
        ...filter,
        source: 'usual',
        status: 'ok',
        rejected: false,
        sort: 'reward',
        desc: true,
        offset: off,
        limit: 1000,
      });
      for (const e of page) {
        if (promoted.has(e.id)) continue;
        const list = best.get(e.taskId) ?? [];
        if (list.length < topK) best.set(e.taskId, [...list, e]);
      }
      if (page.length < 1000) break;
    }
    return best;
  }

  async undo(changeId?: string): Promise<FeedbackChange | null> {
    if (changeId?.startsWith(BULK)) {
      const ids = changeId.slice(BULK.length).split(',').filter(Boolean).map(Number);
      for (const id of [...ids].reverse()) await this.undoOne(id);
      return { changeId, kind: 'bulk-promote', experienceIds: [], at: Date.now() };
    }
    let entry: FeedbackLogEntry | null;
    if (changeId !== undefined) {
      const id = Number(changeId);
      if (!Number.isInteger(id)) throw new NotFoundError(`'${changeId}' is not a change id`);
      entry = await this.store.feedbackEntry(id);
      if (!entry) throw new NotFoundError(`no change '${changeId}'`);
    } else {
      entry =
        (await this.store.feedbackLog({ limit: 200 })).find((e) => e.action !== 'undo' && e.undoneBy === null) ?? null;
      if (!entry) return null;
    }
    await this.undoOne(entry.id);
    return { changeId: String(entry.id), kind: KIND[entry.action], experienceIds: [entry.experienceId], at: entry.at };
  }

  private async undoOne(logId: number): Promise<void> {
    // The buffer's ConflictError is the server's: toResponseError maps it to ErrorCodes.Conflict.
    await this.service.undo(logId, this.by);
  }
}
