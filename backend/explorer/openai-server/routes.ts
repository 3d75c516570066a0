// The routes of the OpenAI surface: what each answers, given a checked-in request. Extra routes
// (rewards) plug in through `extra`.
import type { ServerResponse } from 'node:http';
import { complete, serverError, type Completion, type ServeLimits } from './completions.js';
import { ApiError } from './errors.js';
import { completionBody, completionChunks, modelsBody } from './format.js';
import type { EpisodeBook } from './episodes.js';
import type { PolicyGate } from './policy.js';
import { parseChatRequest } from './request.js';
import { SseWriter } from './sse.js';
import { waitingEpisodes } from './waiting.js';

export interface RouteContext {
  gate: PolicyGate;
  limits: ServeLimits;
  started: number;
  /** Where calls are recorded as episodes (absent: nothing is recorded). */
  episodes?: EpisodeBook;
  /** POST routes beyond chat completions: path -> handler of the parsed body, answering JSON. */
  extra?: Record<string, (body: unknown) => unknown>;
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendError(res: ServerResponse, e: ApiError): void {
  sendJson(res, e.status, e.body());
}

/** Answers a GET: /v1/models, /v1/models/ID and /v1/rft/episodes. */
export function handleGet(ctx: RouteContext, path: string, res: ServerResponse): void {
  const id = ctx.gate.modelId;
  if (path === '/v1/rft/episodes' && ctx.episodes) return sendJson(res, 200, waitingEpisodes(ctx.episodes));
  if (path === '/v1/models') return sendJson(res, 200, modelsBody(id, ctx.started));
  if (path === `/v1/models/${encodeURIComponent(id)}` || path === `/v1/models/${id}`)
    return sendJson(res, 200, modelsBody(id, ctx.started).data[0]);
  if (path.startsWith('/v1/models/'))
    return sendError(
      res,
      new ApiError(
        404,
        `The model '${decodeURIComponent(path.slice(11))}' does not exist`,
        'invalid_request_error',
        'model',
        'model_not_found',
      ),
    );
  sendError(res, new ApiError(404, `no route GET ${path}`, 'invalid_request_error', null, 'not_found'));
}

/** Answers a POST with its parsed JSON body. */
export async function handlePost(ctx: RouteContext, path: string, body: unknown, res: ServerResponse): Promise<void> {
  const extra = ctx.extra?.[path];
  if (extra) return sendJson(res, 200, await extra(body));
  if (path !== '/v1/chat/completions')
    throw new ApiError(404, `no route POST ${path}`, 'invalid_request_error', null, 'not_found');
  const chat = parseChatRequest(body);
  if (chat.model !== undefined && chat.model !== ctx.gate.modelId)
    throw new ApiError(
      404,
      `The model '${chat.model}' does not exist (this server serves '${ctx.gate.modelId}')`,
      'invalid_request_error',
      'model',
      'model_not_found',
    );
  const call = ctx.episodes?.begin(chat);
  let c: Completion;
  try {
    c = await complete(ctx.gate, chat, ctx.limits, call?.prepare);
  } catch (e) {
    call?.abort();
    throw e instanceof ApiError ? e : serverError(e);
  }
  call?.finish(c);
  // Not an OpenAI field: the episode id(s) a client posts rewards for when it named none.
  if (call) res.setHeader('x-rft-episode-id', call.episodeIds.join(','));
  const tok = c.tokenizer;
  if (!chat.stream) return sendJson(res, 200, completionBody(c, chat, ctx.gate.modelId, tok));
  const sse = new SseWriter(res);
  for (const ev of completionChunks(c, chat, ctx.gate.modelId, tok)) {
    if (sse.gone) return;
    sse.send(ev);
  }
  sse.done();
}
