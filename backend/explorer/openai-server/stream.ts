// A completion streamed while it samples: `chat.completion.chunk` events written as each choice's
// tokens arrive (role first, then content deltas, the finish reason, usage when asked). Text that
// could still turn into a stop string, or ends inside a UTF-8 character, waits for the next token.
import type { Tokenizer } from '../../model/tokenizer/types.js';
import { tokenEntry, type Completion } from './completions.js';
import type { ChatRequest } from './request.js';
import type { RawChoice } from './sample.js';
import type { SseWriter } from './sse.js';

export interface ChunkBase {
  id: string;
  created: number;
  model: string;
  version: number;
}

/** How much of TEXT may be sent before the reply ends: not a tail that begins one of STOPS, nor a split character. */
function safeLength(text: string, stops: string[]): number {
  let n = text.length;
  while (n > 0 && text[n - 1] === '\uFFFD') n--;
  for (const s of stops)
    for (let k = Math.min(s.length - 1, n); k > 0; k--)
      if (text.endsWith(s.slice(0, k))) {
        n = Math.min(n, text.length - k);
        break;
      }
  return n;
}

export class LiveStream {
  private readonly sent: number[] = [];
  private readonly lpSent: number[] = [];
  /** Tokens sampled (all choices) when the first content chunk was written: the proof a stream is live. */
  firstChunkAtTokens: number | undefined;
  private sampled = 0;
  private readonly raws: RawChoice[] = [];

  constructor(
    private readonly sse: SseWriter,
    private readonly req: ChatRequest,
    private readonly tok: Tokenizer,
    private readonly base: ChunkBase,
    private readonly stopIds: number[],
  ) {}

  private chunk(index: number, delta: object, extra: object = {}) {
    const { id, created, model, version } = this.base;
    return {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      system_fingerprint: `v${version}`,
      choices: [{ index, delta, logprobs: null, finish_reason: null, ...extra }],
    };
  }

  /** Writes what choice I's new tokens add (C: its tokens so far). */
  onToken(i: number, c: RawChoice): void {
    this.sampled++;
    this.raws[i] = c;
    if (this.sent[i] === undefined) {
      this.sent[i] = 0;
      this.lpSent[i] = 0;
      this.sse.send(this.chunk(i, { role: 'assistant', content: '' }));
    }
    this.flush(i, c, false);
  }

  private flush(i: number, c: RawChoice, final: boolean): void {
    const last = c.tokens[c.tokens.length - 1];
    const visible = last !== undefined && this.stopIds.includes(last) ? c.tokens.length - 1 : c.tokens.length;
    let text = this.tok.decode(c.tokens.slice(0, visible), { skipSpecial: true });
    let cut = false;
    for (const s of this.req.stop) {
      const at = text.indexOf(s);
      if (at >= 0) (text = text.slice(0, at)), (cut = true);
    }
    const upTo = final || cut ? text.length : safeLength(text, this.req.stop);
    const piece = upTo > this.sent[i]! ? text.slice(this.sent[i]!, upTo) : '';
    const lpTo = this.req.logprobs ? visible : this.lpSent[i]!;
    if (!piece && lpTo === this.lpSent[i]) return;
    const lp = this.req.logprobs
      ? { logprobs: { content: this.entries(c, this.lpSent[i]!, lpTo), refusal: null } }
      : {};
    this.sent[i] = Math.max(this.sent[i]!, upTo);
    this.lpSent[i] = lpTo;
    this.firstChunkAtTokens ??= this.sampled;
    this.sse.send(this.chunk(i, { content: piece }, lp));
  }

  private entries(c: RawChoice, from: number, to: number) {
    const out = [];
    for (let t = from; t < to; t++) {
      const top = c.top?.[t]?.map((x) => tokenEntry(this.tok, x.id, x.logprob)) ?? [];
      out.push({ ...tokenEntry(this.tok, c.tokens[t]!, c.logprobs[t]!), top_logprobs: top });
    }
    return out;
  }

  /** A failure after the stream began: the error as the last event (OpenAI's clients raise it), then the end. */
  fail(error: unknown): void {
    this.sse.send(error);
    this.sse.done();
  }

  /** The end of the stream: each choice's held-back text, its finish reason, usage when asked, `[DONE]`. */
  finish(done: Completion): void {
    for (const [i, x] of done.choices.entries()) {
      if (this.sent[i] === undefined) {
        this.sent[i] = 0;
        this.lpSent[i] = 0;
        this.sse.send(this.chunk(i, { role: 'assistant', content: '' }));
      }
      this.flush(i, this.raws[i] ?? { tokens: x.tokens, logprobs: x.logprobs, finishReason: 'stop' }, true);
      this.sse.send(this.chunk(i, {}, { finish_reason: x.finishReason }));
    }
    if (this.req.includeUsage) {
      const completion = done.choices.reduce((s, x) => s + x.tokens.length, 0);
      const p = done.promptTokens.length;
      const { id, created, model, version } = this.base;
      this.sse.send({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        system_fingerprint: `v${version}`,
        choices: [],
        usage: { prompt_tokens: p, completion_tokens: completion, total_tokens: p + completion },
      });
    }
    this.sse.done();
  }
}
