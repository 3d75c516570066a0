// One chat completion: the prompt through the chat template, `n` samples from the policy (in the
// server's shared batch where it can: sample.ts), tool calls parsed back, and (when asked) the top log-probs at each sampled position.
import { randomInt } from 'node:crypto';
import { stopTokens } from '../../model/chat.js';
import { tf, tidy } from '../../model/engine.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import type { Transformer } from '../../model/transformer.js';
import { ApiError, badRequest } from './errors.js';
import type { PolicyGate } from './policy.js';
import { renderPrompt, toolFormat } from './render.js';
import type { ChatRequest } from './request.js';
import { parseToolCalls, type ParsedReply } from './tool-parse.js';
import { batchable } from './batcher.js';
import { sampleAlone, sampleBatched, type SampleWatch } from './sample.js';

export interface ServeLimits {
  /** Largest request body, bytes. */
  maxBodyBytes: number;
  /** Requests answered at once; more get 429. */
  maxConcurrent: number;
  /** Most completion tokens a request may ask for (and the default when it asks none). */
  maxTokens: number;
  /** A request not answered by then gets 504 (its sampling still finishes, then is dropped). */
  requestTimeoutMs: number;
}

export const DEFAULT_LIMITS: ServeLimits = {
  maxBodyBytes: 4 * 2 ** 20,
  maxConcurrent: 64,
  maxTokens: 1024,
  requestTimeoutMs: 300_000,
};

export interface TopLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

export interface SampledChoice {
  tokens: number[];
  /** Behaviour log-prob of each token (the sampling distribution: temperature applied). */
  logprobs: number[];
  text: string;
  finishReason: 'stop' | 'length' | 'tool_calls';
  reply: ParsedReply;
  top?: TopLogprob[][];
}

/** What a request produced: the answer, and what an episode records. */
export interface Completion {
  id: string;
  created: number;
  version: number;
  promptTokens: number[];
  tokenizer: Tokenizer;
  choices: SampledChoice[];
}

/**
 * WATCH sees each token as it is sampled (streaming) and says when the client went away (then
 * ClientGone is thrown). PREPARE maps the chat template's prompt to the one served (an episode's own tokens, episodes.ts). */
export async function complete(
  gate: PolicyGate,
  req: ChatRequest,
  limits: ServeLimits,
  prepare?: (rendered: number[], tok: Tokenizer) => number[],
  watch?: SampleWatch,
): Promise<Completion> {
  if (req.maxTokens !== undefined && req.maxTokens > limits.maxTokens)
    throw badRequest(`max_tokens ${req.maxTokens} is over this server's limit of ${limits.maxTokens}`, 'max_tokens');
  return gate.use(async ({ model, transformer }) => {
    const tok = model.tokenizer;
    const tools = req.toolChoice === 'none' ? undefined : req.tools;
    const rendered = renderPrompt(tok, req.messages, tools);
    const prompt = prepare ? prepare(rendered, tok) : rendered;
    const room = (model.maxSeqLen ?? Number.POSITIVE_INFINITY) - prompt.length;
    if (room <= 0)
      throw badRequest(
        `This model's maximum context length is ${model.maxSeqLen} tokens. However, your messages resulted in ${prompt.length} tokens.`,
        'messages',
        'context_length_exceeded',
      );
    if (req.topLogprobs > 0 && !transformer)
      throw badRequest('top_logprobs needs the weights in the serving process (not a rollout worker)', 'top_logprobs');
    const spec = {
      prompt,
      maxNew: Math.min(req.maxTokens ?? limits.maxTokens, room),
      seed: req.seed ?? randomInt(2 ** 47),
      stopTokens: stopTokens(tok),
    };
    watch?.onStart?.(tok, model.version);
    const raw = batchable(transformer)
      ? await sampleBatched(gate.batcher, transformer, tok, req, spec, watch)
      : await sampleAlone(model, req, spec);
    if (watch?.cancelled?.()) throw new ClientGone();
    const failed = raw.find((g) => g.finishReason === 'error');
    if (failed) throw serverError(new Error(failed.infraError ?? 'the rollout engine failed'));
    const format = tools ? toolFormat(tok) : 'none';
    const choices = raw.map((g): SampledChoice => {
      // A stop string ends the text before it, as OpenAI's does (the tokens keep what was sampled).
      let text = tok.decode(g.tokens, { skipSpecial: true });
      for (const s of req.stop) {
        const at = text.indexOf(s);
        if (at >= 0) text = text.slice(0, at);
      }
      const reply = parseToolCalls(text, format);
      // A repeat guard's stop is a cut-off answer to the client.
      const finishReason = reply.toolCalls.length ? 'tool_calls' : g.finishReason === 'stop' ? 'stop' : 'length';
      const c: SampledChoice = { tokens: g.tokens, logprobs: g.logprobs, text, finishReason, reply };
      if (req.topLogprobs > 0)
        c.top = g.top
          ? g.top.map((row) => row.map((t) => tokenEntry(tok, t.id, t.logprob)))
          : topLogprobs(transformer!, tok, prompt, g.tokens, req.topLogprobs, req.temperature);
      return c;
    });
    return {
      id: watch?.id ?? completionId(),
      created: Math.floor(Date.now() / 1000),
      version: model.version,
      promptTokens: prompt,
      tokenizer: tok,
      choices,
    };
  });
}

export function completionId(): string {
  return `chatcmpl-${randomInt(2 ** 47).toString(36)}${Date.now().toString(36)}`;
}

export function tokenEntry(tok: Tokenizer, id: number, logprob: number): TopLogprob {
  const token = tok.decode([id]);
  return { token, logprob, bytes: [...Buffer.from(token, 'utf8')] };
}

/** The K most likely tokens at each of RESPONSE's positions, under the sampling temperature. */
function topLogprobs(
  model: Transformer,
  tok: Tokenizer,
  prompt: number[],
  response: number[],
  k: number,
  temperature: number,
): TopLogprob[][] {
  if (!response.length) return [];
  const ids = [...prompt, ...response];
  const { values, indices } = tidy(() => {
    const logits = model.forward(tf.tensor2d(ids, [1, ids.length], 'int32')).logits;
    const rows = tf.reshape(tf.slice(logits, [0, prompt.length - 1, 0], [1, response.length, -1]), [
      response.length,
      -1,
    ]);
    const scaled = temperature > 0 ? tf.div(rows, temperature) : rows;
    const t = tf.topk(tf.logSoftmax(scaled as tf.Tensor2D), k);
    return { values: t.values, indices: t.indices };
  });
  const v = values.arraySync() as number[][];
  const ix = indices.arraySync() as number[][];
  values.dispose();
  indices.dispose();
  return v.map((row, t) => row.map((lp, j) => tokenEntry(tok, ix[t]![j]!, lp)));
}

/** The client disconnected before its answer was complete: nothing is answered or recorded. */
export class ClientGone extends Error {
  constructor() {
    super('the client disconnected');
  }
}

/** A sampling failure of the server itself (never the client's fault): 500, named. */
export function serverError(e: unknown): ApiError {
  return new ApiError(500, `the policy failed to answer: ${(e as Error).message}`, 'server_error');
}
