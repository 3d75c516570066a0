// Served calls grouped into episodes (metadata.episode_id), each episode one multi-turn experience:
// the model's own tokens trainable with their behaviour log-probs and version, everything between
// them (system, user, tool output, template markers) masked. A call whose messages extend the
// previous call's messages and reply is answered from the episode's own tokens (so what is trained
// is exactly what the model saw); one that does not starts a new branch, stored as its own row
// saying why. An episode waits for its reward; past the reward timeout it is dropped and counted,
// never trained as zero.
import { createHash, randomBytes } from 'node:crypto';
import type { Experience, TokenSegment } from '../../core/types.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import { newExperienceId } from '../workflow.js';
import type { Completion } from './completions.js';
import { ApiError, badRequest } from './errors.js';
import type { ApiMessage, ChatRequest } from './request.js';
import { extendsTranscript } from './transcript.js';

interface Branch {
  prompt: number[];
  tokens: number[];
  mask: number[];
  logprobs: number[];
  segments: TokenSegment[];
  texts: string[];
  calls: number;
  /** Why this branch started (absent for the first). */
  reason?: string;
  /** The last call's messages and the reply given, for the next call's extension check. */
  transcript: ApiMessage[];
}

export interface Episode {
  id: string;
  taskId: string;
  firstUser: string;
  branches: Branch[];
  lastActivity: number;
  busy: boolean;
  /** metadata of the calls (answer, ...), for a reward function from the config. */
  metadata: Record<string, string>;
}

export interface EpisodeStats {
  episodes: number;
  rewarded: number;
  /** Dropped unrewarded past the reward timeout. */
  dropped: number;
  branches: number;
  experiences: number;
  /** Calls answered 504 past the request timeout: never recorded (the client never saw the reply). */
  expired: number;
}

export interface EpisodeBookOptions {
  runId: string;
  /** Where rewarded episodes' experiences go (the run's buffer). */
  sink: (exps: Experience[]) => Promise<void>;
  rewardTimeoutMs: number;
  now?: () => number;
  /** Closed episode ids remembered (default CLOSED_LIMIT); the oldest are forgotten first. */
  closedLimit?: number;
  /** After an episode was rewarded and closed (its state is then kept: serve-endpoint.ts). */
  onClosed?: () => Promise<void>;
}

/**
 * Closed (rewarded or dropped) ids kept so a late reward or call is refused by name. Bounded so a
 * long serve run does not grow without limit (~100 bytes an id); an id forgotten past it is answered
 * as an unknown one (a reward refused, a call starts a new episode).
 */
export const CLOSED_LIMIT = 100_000;

/** What a serve run keeps across a stop and `rft resume` (store state `serve_episodes`). */
export interface EpisodeBookState {
  open: Episode[];
  closed: [string, 'rewarded' | 'dropped'][];
  stats: EpisodeStats;
}

/** One call of an episode, from before sampling to its answer. */
export interface EpisodeCall {
  episodeIds: string[];
  /** The prompt to serve, given the chat template's rendering of the request. */
  prepare(rendered: number[], tok: Tokenizer): number[];
  finish(c: Completion): void;
  abort(): void;
  /** The call was answered 504 (past the request timeout): its reply is not recorded, only counted. */
  expire(): void;
}

const taskHash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);

function firstUser(messages: ApiMessage[]): string {
  return messages.find((m) => m.role === 'user')?.content ?? '';
}

function startsWith(a: number[], prefix: number[]): boolean {
  if (a.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (a[i] !== prefix[i]) return false;
  return true;
}

export class EpisodeBook {
  private readonly open = new Map<string, Episode>();
  /** Named episodes whose first call is being answered (not open until it is): a second call waits. */
  private readonly starting = new Set<string>();
  /** Ids that were rewarded or dropped, so a late reward is refused by name. */
  private readonly closed = new Map<string, 'rewarded' | 'dropped'>();
  /** Episodes whose reward is being written: kept as rewarded, so a kill mid-write never writes them twice. */
  private readonly rewarding = new Set<string>();
  private readonly inflight = new Set<Promise<void>>();
  readonly stats: EpisodeStats = { episodes: 0, rewarded: 0, dropped: 0, branches: 0, experiences: 0, expired: 0 };
  private readonly now: () => number;
  private readonly closedLimit: number;

  constructor(private readonly o: EpisodeBookOptions) {
    this.now = o.now ?? Date.now;
    this.closedLimit = o.closedLimit ?? CLOSED_LIMIT;
  }

  /** Closed ids remembered now (at most the closed limit). */
  get closedCount(): number {
    return this.closed.size;
  }

  private close(id: string, how: 'rewarded' | 'dropped'): void {
    this.closed.delete(id);
    this.closed.set(id, how);
    // A Map iterates in insertion order: the first key is the oldest closed.
    while (this.closed.size > this.closedLimit) this.closed.delete(this.closed.keys().next().value!);
  }

  /** The open episodes (none busy: taken between calls), closed ids and counts, for a resume. */
  snapshot(): EpisodeBookState {
    const writing = [...this.rewarding].map((id): [string, 'rewarded'] => [id, 'rewarded']);
    return {
      open: [...this.open.values()].filter((e) => !this.rewarding.has(e.id)).map((e) => ({ ...e, busy: false })),
      closed: [...this.closed, ...writing],
      stats: { ...this.stats },
    };
  }

  /** Resolves once the rewards being written are written (or failed): a close waits for them. */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.inflight]);
  }

  /** Takes back what snapshot() kept (a resumed run): the episodes' reward timeouts count from now. */
  restore(s: EpisodeBookState): void {
    const at = this.now();
    for (const e of s.open) this.open.set(e.id, { ...e, busy: false, lastActivity: at });
    for (const [id, how] of s.closed) this.close(id, how);
    Object.assign(this.stats, s.stats);
  }

  get(id: string): Episode | undefined {
    return this.open.get(id);
  }

  /** The episodes waiting for their reward (GET /v1/rft/episodes: a person rates them in the editor). */
  waiting(): Episode[] {
    return [...this.open.values()];
  }

  /** Checks the request against its episode and holds the episode for this call. */
  begin(req: ChatRequest): EpisodeCall {
    const given = req.metadata.episode_id;
    if (given !== undefined && req.n > 1)
      throw badRequest('an episode follows one conversation: n must be 1 with metadata.episode_id', 'n');
    if (given !== undefined && this.closed.has(given))
      throw badRequest(
        `episode ${given} was ${this.closed.get(given) === 'rewarded' ? 'already rewarded' : 'dropped (no reward within the reward timeout)'}; start a new episode id`,
        'metadata.episode_id',
        'episode_closed',
      );
    const base = given ?? `ep-${randomBytes(9).toString('hex')}`;
    const ids = req.n > 1 ? Array.from({ length: req.n }, (_, i) => `${base}-${i}`) : [base];
    const taskId = req.metadata.task_id ?? `t-${taskHash(firstUser(req.messages))}`;
    const ep = given !== undefined ? this.open.get(given) : undefined;
    if (ep?.busy || (given !== undefined && !ep && this.starting.has(given)))
      throw new ApiError(
        409,
        `a call of episode ${given} is still being answered; wait for it`,
        'invalid_request_error',
        'metadata.episode_id',
        'episode_busy',
      );
    if (ep && req.metadata.task_id !== undefined && req.metadata.task_id !== ep.taskId)
      throw badRequest(`episode ${given} has task id ${ep.taskId}, not ${req.metadata.task_id}`, 'metadata.task_id');
    if (ep) ep.busy = true;
    else if (given !== undefined) this.starting.add(given);
    // The episode taken for this call is free again (its first call's id no longer reserved).
    const free = () => {
      if (ep) ep.busy = false;
      else if (given !== undefined) this.starting.delete(given);
    };
    let plan: { branch: Branch; delta: number } | { reason?: string } = {};
    return {
      episodeIds: ids,
      prepare: (rendered, tok) => {
        const last = ep?.branches[ep.branches.length - 1];
        if (!last) return rendered;
        if (!extendsTranscript(last.transcript, req.messages)) {
          plan = {
            reason: `call ${last.calls + 1}: the messages do not extend the previous call's messages and reply`,
          };
          return rendered;
        }
        const so = [...last.prompt, ...last.tokens];
        if (startsWith(rendered, so)) {
          plan = { branch: last, delta: rendered.length - so.length };
          return rendered;
        }
        // The same text tokenized differently (a sampled token split that re-encoding merges): the
        // episode's own tokens, then the new turns' text.
        const soText = tok.decode(so);
        const text = tok.decode(rendered);
        if (text.startsWith(soText)) {
          const rest = tok.encode(text.slice(soText.length), { allowSpecial: true });
          plan = { branch: last, delta: rest.length };
          return [...so, ...rest];
        }
        plan = {
          reason: `call ${last.calls + 1}: the chat template lays out the earlier turns differently when it renders them again`,
        };
        return rendered;
      },
      finish: (c) => {
        const at = this.now();
        c.choices.forEach((choice, i) => {
          const reply: ApiMessage = {
            role: 'assistant',
            content: choice.reply.content ?? '',
            ...(choice.reply.toolCalls.length ? { tool_calls: choice.reply.toolCalls } : {}),
          };
          const transcript = [...req.messages, reply];
          if ('branch' in plan) {
            const b = plan.branch;
            const delta = c.promptTokens.slice(c.promptTokens.length - plan.delta);
            b.tokens.push(...delta, ...choice.tokens);
            b.mask.push(...delta.map(() => 0), ...choice.tokens.map(() => 1));
            b.logprobs.push(...delta.map(() => 0), ...choice.logprobs);
            // Segments cover the response contiguously: the turns between replies go with the reply after them.
            const from = b.segments[b.segments.length - 1]!.end;
            b.segments.push({ version: c.version, start: from, end: b.tokens.length });
            b.texts.push(choice.text);
            b.calls++;
            b.transcript = transcript;
          } else {
            const branch: Branch = {
              prompt: c.promptTokens,
              tokens: [...choice.tokens],
              mask: choice.tokens.map(() => 1),
              logprobs: [...choice.logprobs],
              segments: [{ version: c.version, start: 0, end: choice.tokens.length }],
              texts: [choice.text],
              calls: 1,
              reason: plan.reason,
              transcript,
            };
            const existing = ep ?? this.open.get(ids[i]!);
            if (existing) existing.branches.push(branch);
            else {
              this.open.set(ids[i]!, {
                id: ids[i]!,
                taskId,
                firstUser: firstUser(req.messages),
                branches: [branch],
                lastActivity: at,
                busy: false,
                metadata: { ...req.metadata },
              });
              this.stats.episodes++;
            }
            this.stats.branches++;
          }
          const e = this.open.get(ids[i]!);
          if (e) {
            e.lastActivity = at;
            Object.assign(e.metadata, req.metadata);
          }
        });
        free();
      },
      abort: free,
      expire: () => {
        free();
        this.stats.expired++;
      },
    };
  }

  /** Closes episode ID with REWARD: its branches become experiences in the sink. */
  async reward(id: string, reward: number, details?: Record<string, number | string | boolean>): Promise<void> {
    const done = this.rewardNow(id, reward, details);
    this.inflight.add(done);
    try {
      await done;
    } finally {
      this.inflight.delete(done);
    }
    await this.o.onClosed?.();
  }

  private async rewardNow(id: string, reward: number, details?: Record<string, number | string | boolean>) {
    const ep = this.open.get(id)!;
    const exps = ep.branches.map((b, k) => this.experience(ep, b, k, reward, details));
    // Held while it is written, so no call or second reward slips in; reopened if the write fails.
    ep.busy = true;
    this.rewarding.add(id);
    try {
      await this.o.sink(exps);
    } finally {
      ep.busy = false;
      this.rewarding.delete(id);
    }
    this.open.delete(id);
    this.close(id, 'rewarded');
    this.stats.rewarded++;
    this.stats.experiences += exps.length;
  }

  /** Why a reward for ID cannot be taken, or undefined when it can. */
  refusal(id: string): string | undefined {
    const c = this.closed.get(id);
    if (c === 'rewarded') return 'already rewarded';
    if (c === 'dropped') return 'unknown episode id (dropped: no reward within the reward timeout)';
    const ep = this.open.get(id);
    if (!ep && this.starting.has(id)) return 'a call of this episode is still being answered';
    if (!ep) return 'unknown episode id';
    if (ep.busy) return 'a call of this episode is still being answered';
    return undefined;
  }

  /** Drops episodes with no reward past the timeout; returns how many. */
  sweep(): number {
    const limit = this.now() - this.o.rewardTimeoutMs;
    let n = 0;
    for (const [id, ep] of this.open) {
      if (ep.busy || ep.lastActivity > limit) continue;
      this.open.delete(id);
      this.close(id, 'dropped');
      n++;
    }
    this.stats.dropped += n;
    return n;
  }

  private experience(
    ep: Episode,
    b: Branch,
    k: number,
    reward: number,
    details?: Record<string, number | string | boolean>,
  ): Experience {
    return {
      id: newExperienceId(),
      taskId: ep.taskId,
      groupId: `${this.o.runId}:serve:${ep.taskId}`,
      runId: this.o.runId,
      source: 'usual',
      promptTokens: b.prompt,
      promptText: ep.firstUser,
      responseTokens: b.tokens,
      responseText: b.texts.join('\n'),
      actionMask: b.mask,
      logprobs: b.logprobs,
      modelVersion: b.segments[b.segments.length - 1]!.version,
      segments: b.segments,
      reward,
      ...(details ? { rewardDetails: details } : {}),
      status: 'ok',
      useCount: 0,
      createdAt: this.now(),
      split: 'train',
      metadata: {
        served: true,
        episode_id: ep.id,
        branch: k,
        calls: b.calls,
        // The conversation as the client sent it (the buffer browser shows it turn by turn).
        messages: b.transcript,
        ...(b.reason ? { branch_reason: b.reason } : {}),
      },
    };
  }
}
