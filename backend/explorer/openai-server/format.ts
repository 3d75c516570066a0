// A completion in OpenAI's answer shapes: one `chat.completion` object, or the
// `chat.completion.chunk` events of a stream (role, content deltas token by token, tool calls, the
// finish reason, then usage when stream_options.include_usage asks for it).
import { stopTokens } from '../../model/chat.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import { tokenEntry, type Completion, type SampledChoice } from './completions.js';
import type { ChatRequest } from './request.js';

/** The tokens a client sees: the closing stop token is the turn's end, not text. */
function visibleCount(tok: Tokenizer, c: SampledChoice): number {
  const last = c.tokens[c.tokens.length - 1];
  return last !== undefined && stopTokens(tok).includes(last) ? c.tokens.length - 1 : c.tokens.length;
}

function logprobEntries(tok: Tokenizer, c: SampledChoice, from: number, to: number) {
  const out = [];
  for (let i = from; i < to; i++)
    out.push({ ...tokenEntry(tok, c.tokens[i]!, c.logprobs[i]!), top_logprobs: c.top?.[i] ?? [] });
  return out;
}

function usage(c: Completion) {
  const completion = c.choices.reduce((s, x) => s + x.tokens.length, 0);
  return {
    prompt_tokens: c.promptTokens.length,
    completion_tokens: completion,
    total_tokens: c.promptTokens.length + completion,
  };
}

export function completionBody(c: Completion, req: ChatRequest, modelId: string, tok: Tokenizer) {
  return {
    id: c.id,
    object: 'chat.completion',
    created: c.created,
    model: modelId,
    system_fingerprint: `v${c.version}`,
    choices: c.choices.map((x, index) => ({
      index,
      message: {
        role: 'assistant',
        content: x.reply.content,
        refusal: null,
        ...(x.reply.toolCalls.length ? { tool_calls: x.reply.toolCalls } : {}),
      },
      logprobs: req.logprobs ? { content: logprobEntries(tok, x, 0, visibleCount(tok, x)), refusal: null } : null,
      finish_reason: x.finishReason,
    })),
    usage: usage(c),
  };
}

/** The events of a streamed answer, in order (the caller writes each, then `[DONE]`). */
export function* completionChunks(c: Completion, req: ChatRequest, modelId: string, tok: Tokenizer) {
  const base = {
    id: c.id,
    object: 'chat.completion.chunk',
    created: c.created,
    model: modelId,
    system_fingerprint: `v${c.version}`,
  };
  const chunk = (index: number, delta: object, extra: object = {}) => ({
    ...base,
    choices: [{ index, delta, logprobs: null, finish_reason: null, ...extra }],
  });
  for (const [index, x] of c.choices.entries()) {
    yield chunk(index, { role: 'assistant', content: '' });
    if (x.reply.toolCalls.length) {
      if (x.reply.content) yield chunk(index, { content: x.reply.content });
      for (const [i, call] of x.reply.toolCalls.entries()) yield chunk(index, { tool_calls: [{ index: i, ...call }] });
    } else {
      // Token by token: each delta is the text the token added (a token ending inside a UTF-8
      // character waits for the next), cut where a stop string ended the text.
      const n = visibleCount(tok, x);
      let sent = 0;
      let from = 0;
      for (let i = 0; i < n && sent < x.text.length; i++) {
        const upTo = tok.decode(x.tokens.slice(0, i + 1), { skipSpecial: true });
        if (upTo.endsWith('\uFFFD') && i < n - 1) continue;
        const piece = upTo.slice(sent, x.text.length);
        sent += piece.length;
        const lp = req.logprobs ? { logprobs: { content: logprobEntries(tok, x, from, i + 1), refusal: null } } : {};
        from = i + 1;
        if (piece || req.logprobs) yield chunk(index, { content: piece }, lp);
      }
    }
    yield chunk(index, {}, { finish_reason: x.finishReason });
  }
  if (req.includeUsage) yield { ...base, choices: [], usage: usage(c) };
}

export function modelsBody(modelId: string, created: number) {
  return { object: 'list', data: [{ id: modelId, object: 'model', created, owned_by: 'rft-studio' }] };
}
