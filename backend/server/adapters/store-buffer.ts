// BufferPort over the buffer's ExperienceStore (SQLite or PostgreSQL): list rows for the
// virtualised browser without token arrays, counts for the sidebar, export by keyset scan.
import type { Experience } from '../../core/types.js';
import type { BufferCounts, ExperienceDetail, ExperienceFilter, ExperienceSummary } from '../../core/protocol.js';
import type { RunTokenizers } from './run-tokenizers.js';
import type { ExperienceStore } from '../../buffer/storage/types.js';
import type { BufferPort, ListQuery } from '../ports.js';
import type { SynthesizedTask, TaskStats } from '../../core/protocol.js';
import { isSynthesized } from '../../buffer/pipeline/task/synthesize.js';
import { TaskStatsIndex } from './task-stats.js';
import { pairCounts } from '../../buffer/pairs.js';
import { tokenPieces } from '../../model/tokenizer/pieces.js';

const PREVIEW = 160;

export function summarize(e: Experience): ExperienceSummary {
  return {
    id: e.id,
    taskId: e.taskId,
    groupId: e.groupId,
    runId: e.runId,
    source: e.source,
    status: e.status,
    reward: e.reward,
    modelVersion: e.modelVersion,
    createdAt: e.createdAt,
    promptPreview: e.promptText.slice(0, PREVIEW),
    responsePreview: e.responseText.slice(0, PREVIEW),
    responseTokens: e.responseTokens.length,
    useCount: e.useCount,
    ...(e.feedback ? { feedback: e.feedback } : {}),
  };
}

/** Same semantics as the store's filter, for the export scan. */
export function matches(e: Experience, f: ExperienceFilter | undefined): boolean {
  if (!f) return true;
  if (f.runId !== undefined && e.runId !== f.runId) return false;
  if (f.taskId !== undefined && e.taskId !== f.taskId) return false;
  if (f.groupId !== undefined && e.groupId !== f.groupId) return false;
  if (f.source !== undefined && e.source !== f.source) return false;
  if (f.status !== undefined && e.status !== f.status) return false;
  if (f.split !== undefined && (e.split ?? 'train') !== f.split) return false;
  if (f.minReward !== undefined && !(e.reward >= f.minReward)) return false;
  if (f.maxReward !== undefined && !(e.reward <= f.maxReward)) return false;
  if (f.minVersion !== undefined && e.modelVersion < f.minVersion) return false;
  if (f.maxVersion !== undefined && e.modelVersion > f.maxVersion) return false;
  if (f.rejected !== undefined && !!e.feedback?.rejected !== f.rejected) return false;
  if (f.text) {
    const t = f.text.toLowerCase();
    if (!e.promptText.toLowerCase().includes(t) && !e.responseText.toLowerCase().includes(t)) return false;
  }
  return true;
}

export class StoreBuffer implements BufferPort {
  constructor(
    readonly store: ExperienceStore,
    readonly path: string,
    private readonly tokenizers?: RunTokenizers,
    /** Close the store on close() (false when someone else owns it). */
    private readonly owns = true,
  ) {}

  async list(q: ListQuery): Promise<{ total: number; rows: ExperienceSummary[] }> {
    const filter = q.filter ?? {};
    const [total, rows] = await Promise.all([
      this.store.count(filter),
      q.limit > 0
        ? this.store.list({
            ...filter,
            offset: q.offset,
            limit: q.limit,
            sort: q.sort ?? 'seq',
            desc: q.descending ?? false,
          })
        : Promise.resolve([]),
    ]);
    return { total, rows: rows.map(summarize) };
  }

  async counts(): Promise<BufferCounts> {
    const s = await this.store.stats();
    return {
      usual: s.bySource.usual ?? 0,
      expert: s.bySource.expert ?? 0,
      taskset: s.tasks,
      rejected: s.rejected,
      infraFailure: s.byStatus.infra_failure ?? 0,
    };
  }

  async get(id: string): Promise<ExperienceDetail | null> {
    const e = await this.store.get(id);
    if (!e) return null;
    const tok = await this.tokenizers?.forRun(e.runId).catch(() => null);
    const meta = (await this.store.getTask(e.runId, e.taskId).catch(() => null))?.metadata;
    // Text per token; a character split across tokens shows on the token that completes it.
    return {
      ...e,
      ...(tok ? { responsePieces: tokenPieces(tok, e.responseTokens) } : {}),
      ...(meta && Object.keys(meta).length ? { taskMetadata: meta } : {}),
    };
  }

  group(groupId: string): Promise<Experience[]> {
    return this.store.group(groupId);
  }

  private taskIndex: TaskStatsIndex | undefined;
  taskStats(runId?: string): Promise<TaskStats[]> {
    this.taskIndex ??= new TaskStatsIndex(this.store);
    return this.taskIndex.stats(runId);
  }

  async synthesized(
    runId: string,
    limit: number,
  ): Promise<{ total: number; byOrigin: Record<string, number>; tasks: SynthesizedTask[] }> {
    const all = (await this.store.listTasks(runId)).filter(isSynthesized);
    const byOrigin: Record<string, number> = {};
    for (const t of all) byOrigin[String(t.metadata!.origin)] = (byOrigin[String(t.metadata!.origin)] ?? 0) + 1;
    const tasks = all.slice(Math.max(0, all.length - limit)).map((t) => ({
      id: t.id,
      origin: String(t.metadata!.origin),
      parent: String(t.metadata?.parent ?? ''),
      step: Number(t.metadata?.synth_step ?? -1),
      prompt: (t.prompt ?? (t.messages ?? []).map((m) => m.content).join('\n')).slice(0, 500),
      ...(t.answer !== undefined ? { answer: t.answer.slice(0, 200) } : {}),
    }));
    return { total: all.length, byOrigin, tasks };
  }

  async tasks(runId: string, limit: number): Promise<{ total: number; tasks: { id: string; prompt: string }[] }> {
    const [total, rows] = await Promise.all([this.store.countTasks(runId), this.store.listTasks(runId, { limit })]);
    const tasks = rows.map((t) => ({
      id: t.id,
      prompt: t.prompt ?? (t.messages ?? []).map((m) => m.content).join('\n'),
    }));
    return { total, tasks };
  }

  async pairs(runId: string): Promise<{ total: number; byOrigin: Record<string, number> }> {
    const byOrigin = await pairCounts(this.store, runId);
    return { total: Object.values(byOrigin).reduce((a, b) => a + b, 0), byOrigin };
  }

  async *iterate(filter?: ExperienceFilter): AsyncIterable<Experience> {
    let after = 0;
    for (;;) {
      const page = await this.store.scan(after, 500);
      if (page.length === 0) return;
      for (const { seq, experience } of page) {
        after = seq;
        if (matches(experience, filter)) yield experience;
      }
    }
  }

  async close(): Promise<void> {
    if (this.owns) await this.store.close();
  }
}
