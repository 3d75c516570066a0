// An external rollout model: any OpenAI-compatible chat endpoint (llama.cpp server, Ollama, vLLM,
// ...) via POST {baseUrl}/v1/chat/completions, for explore-only and bench modes. The prompt tokens
// are turned back into chat messages (the layout in model/chat.ts), the completion text is
// re-tokenised with our tokenizer, and when the server returns log-probs each of its tokens' log-prob
// is credited to the local token that holds the token's last character, so the sequence log-prob is
// kept (per-token values are only exact when both tokenisers agree). Without server log-probs the
// sample has none (empty list): fine to explore and score, not to train on off-policy.
// A failed request (network, timeout, HTTP error, malformed reply) is retried, then returned as
// an infra failure for that sample: never an empty answer scored 0.
import { InfrastructureError } from '../core/errors.js';
import type { ChatMessage } from '../core/types.js';
import type { GenerateOptions } from '../model/generate.js';
import type { Tokenizer } from '../model/tokenizer/types.js';
import { hash32 } from './tasksets/builtin.js';
import type { RolloutGeneration, RolloutModel } from './workflow.js';

export interface OpenAIModelOptions {
  /** e.g. http://127.0.0.1:8080 (the path /v1/chat/completions is added; a trailing /v1 is accepted). */
  baseUrl: string;
  model: string;
  tokenizer: Tokenizer;
  apiKey?: string;
  /** Recorded as the experiences' model version; default: a hash of the model name. */
  version?: number;
  timeoutMs?: number;
  maxRetries?: number;
  /** Requests in flight at once. */
  concurrency?: number;
  /** Longest reply body read (bytes); a longer one is cut off and the sample is an infra failure. Default DEFAULT_MAX_REPLY_BYTES. */
  maxReplyBytes?: number;
}

/** Far above any chat completion of this project's lengths (8k tokens with log-probs is ~2 MB), far below what stalls a run. */
export const DEFAULT_MAX_REPLY_BYTES = 8 << 20;

interface ChatCompletion {
  choices?: {
    message?: { content?: string | null };
    finish_reason?: string;
    logprobs?: { content?: { token: string; logprob: number }[] | null } | null;
  }[];
}

/** The model version of an endpoint: a stable positive 31-bit hash of its model name. */
export function endpointVersion(model: string): number {
  return hash32(`openai:${model}`) & 0x7fffffff;
}

/** Prompt tokens in the chat layout -> messages (role markers and <|end|> read at the token level). */
export function promptMessages(tok: Tokenizer, ids: number[]): ChatMessage[] {
  const roles = new Map<number, ChatMessage['role']>(
    (['system', 'user', 'assistant', 'environment'] as const).map((r) => [tok.specialId(r), r]),
  );
  const out: ChatMessage[] = [];
  let role: ChatMessage['role'] | null = null;
  let content: number[] = [];
  const flush = () => {
    if (role) out.push({ role, content: tok.decode(content, { skipSpecial: true }) });
    role = null;
    content = [];
  };
  for (const id of ids) {
    if (roles.has(id)) {
      flush();
      role = roles.get(id)!;
    } else if (id === tok.specialId('end')) flush();
    else if (id !== tok.bosId && id !== tok.padId) content.push(id);
  }
  // The trailing <|assistant|> marker opens the turn the endpoint is asked to write.
  const last = role as ChatMessage['role'] | null;
  if (last && !(last === 'assistant' && content.length === 0)) flush();
  // The endpoint has no environment role: environment turns are user turns to it.
  return out.map((m) => (m.role === 'environment' ? { role: 'user', content: m.content } : m));
}

/** Credit each server token's log-prob to the local token holding its last character. */
export function alignLogprobs(
  tok: Tokenizer,
  localTokens: number[],
  serverTokens: { token: string; logprob: number }[],
): number[] | null {
  const ends: number[] = [];
  let text = '';
  for (const id of localTokens) {
    text += tok.decode([id], { skipSpecial: true });
    ends.push(text.length);
  }
  if (serverTokens.map((t) => t.token).join('') !== text) return null;
  const out = localTokens.map(() => 0);
  let pos = 0;
  let k = 0;
  for (const st of serverTokens) {
    pos += st.token.length;
    if (st.token.length === 0) continue;
    while (k < ends.length - 1 && ends[k]! < pos) k++;
    out[k] = out[k]! + st.logprob;
  }
  return out;
}

export class OpenAIRolloutModel implements RolloutModel {
  readonly version: number;
  readonly tokenizer: Tokenizer;
  private readonly url: string;

  constructor(private readonly opts: OpenAIModelOptions) {
    this.tokenizer = opts.tokenizer;
    this.version = opts.version ?? endpointVersion(opts.model);
    this.url = `${opts.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1/chat/completions`;
  }

  async generate(prompts: number[][], opts: GenerateOptions): Promise<RolloutGeneration[]> {
    if (opts.prefix) throw new Error('the external rollout model takes no vision prefix');
    const out = new Array<RolloutGeneration>(prompts.length);
    let next = 0;
    const lanes = Array.from({ length: Math.min(prompts.length, this.opts.concurrency ?? 4) }, async () => {
      while (next < prompts.length) {
        const i = next++;
        out[i] = await this.one(prompts[i]!, opts, (opts.seed ?? 0) + i);
      }
    });
    await Promise.all(lanes);
    return out;
  }

  private async one(prompt: number[], opts: GenerateOptions, seed: number): Promise<RolloutGeneration> {
    const body = {
      model: this.opts.model,
      messages: promptMessages(this.tokenizer, prompt),
      max_tokens: opts.maxNewTokens,
      temperature: opts.temperature ?? 1,
      top_p: opts.topP ?? 1,
      ...(opts.topK ? { top_k: opts.topK } : {}),
      seed,
      logprobs: true,
      ...(opts.stopStrings?.length ? { stop: opts.stopStrings } : {}),
    };
    let lastError = '';
    const attempts = 1 + (this.opts.maxRetries ?? 2);
    for (let a = 0; a < attempts; a++) {
      try {
        return this.toGeneration(await this.post(body));
      } catch (e) {
        lastError = (e as Error).message;
        if (e instanceof PermanentError) break;
      }
    }
    return { tokens: [], text: '', logprobs: [], finishReason: 'error', infraError: `${this.url}: ${lastError}` };
  }

  private async post(body: unknown): Promise<ChatCompletion> {
    const ctl = new AbortController();
    const timeout = this.opts.timeoutMs ?? 60_000;
    const timer = setTimeout(() => ctl.abort(), timeout);
    try {
      const res = await fetch(this.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}),
        },
        body: JSON.stringify(body),
        signal: ctl.signal,
      });
      const text = await readCapped(res, this.opts.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES);
      if (!res.ok) {
        const msg = `HTTP ${res.status}: ${text.slice(0, 200)}`;
        // Client errors other than rate limits will not go away on retry.
        throw res.status >= 400 && res.status < 500 && res.status !== 429 && res.status !== 408
          ? new PermanentError(msg)
          : new InfrastructureError(msg);
      }
      try {
        return JSON.parse(text) as ChatCompletion;
      } catch {
        throw new InfrastructureError(`reply is not JSON: ${text.slice(0, 100)}`);
      }
    } catch (e) {
      if (ctl.signal.aborted) throw new InfrastructureError(`no reply within ${timeout} ms`);
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  private toGeneration(r: ChatCompletion): RolloutGeneration {
    const c = r.choices?.[0];
    const content = c?.message?.content;
    if (!c || typeof content !== 'string') throw new InfrastructureError('reply has no choices[0].message.content');
    const stopped = c.finish_reason === 'stop';
    const tokens = this.tokenizer.encode(content);
    let logprobs: number[] = [];
    const lp = c.logprobs?.content;
    if (
      Array.isArray(lp) &&
      lp.every((t) => typeof t?.token === 'string' && typeof t.logprob === 'number' && Number.isFinite(t.logprob))
    ) {
      logprobs = alignLogprobs(this.tokenizer, tokens, lp) ?? [];
    }
    // A finished turn ends with <|end|> like a local sample; the endpoint's own end token is not in
    // its log-probs, so it gets 0.
    if (stopped) {
      tokens.push(this.tokenizer.specialId('end'));
      if (logprobs.length) logprobs.push(0);
    }
    return { tokens, text: content, logprobs, finishReason: stopped ? 'stop' : 'length' };
  }
}

class PermanentError extends InfrastructureError {}

/**
 * The body as text, refused (PermanentError: asking again gets the same) once it passes `max` bytes,
 * by its content-length before reading or while streaming: a huge reply costs at most `max` bytes
 * of reading, never the decoding and tokenising of all of it. The caller's abort signal bounds the time.
 */
async function readCapped(res: Response, max: number): Promise<string> {
  const over = () => new PermanentError(`reply is over ${max} bytes (the max_reply_bytes limit)`);
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) {
    await res.body?.cancel().catch(() => {});
    throw over();
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.byteLength;
    if (n > max) {
      await reader.cancel().catch(() => {});
      throw over();
    }
    parts.push(value);
  }
  return Buffer.concat(parts).toString('utf8');
}
