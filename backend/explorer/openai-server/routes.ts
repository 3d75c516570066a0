// The routes of the OpenAI surface: what each answers, given a checked-in request. Extra routes
// (rewards) plug in through `extra`.
import type { ServerResponse } from 'node:http';
import { stopTokens } from '../../model/chat.js';
import { ClientGone, complete, completionId, serverError, type Completion, type ServeLimits } from './completions.js';
import { ApiError } from './errors.js';
import { completionBody, completionChunks, modelsBody } from './format.js';
import type { EpisodeBook } from './episodes.js';
import type { PolicyGate } from './policy.js';
import { parseChatRequest } from './request.js';
import type { SampleWatch } from './sample.js';
import { SseWriter } from './sse.js';
import { LiveStream } from './stream.js';
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

/** Answers a POST with its parsed JSON body; EXPIRED aborts once the client was answered 504. */
export async function handlePost(
  ctx: RouteContext,
  path: string,
  body: unknown,
  res: ServerResponse,
  expired?: AbortSignal,
): Promise<void> {
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
  // A client that goes away frees its rows in the batch; its call is neither answered nor recorded.
  let gone = false;
  res.on('close', () => (gone = !res.writableEnded));
  const id = completionId();
  // Tool calls are parsed from the whole reply: such a stream is sent once it is sampled.
  const live = chat.stream && !(chat.tools?.length && chat.toolChoice !== 'none');
  let stream: LiveStream | undefined;
  const watch: SampleWatch = {
    id,
    cancelled: () => gone,
    ...(live && {
      onStart: (tok, version) => {
        if (call) res.setHeader('x-rft-episode-id', call.episodeIds.join(','));
        const base = { id, created: Math.floor(Date.now() / 1000), model: ctx.gate.modelId, version };
        stream = new LiveStream(new SseWriter(res), chat, tok, base, stopTokens(tok));
      },
      onToken: (i, c) => stream!.onToken(i, c),
    }),
  };
  let c: Completion;
  try {
    c = await complete(ctx.gate, chat, ctx.limits, call?.prepare, watch);
  } catch (e) {
    call?.abort();
    if (e instanceof ClientGone) return;
    const err = e instanceof ApiError ? e : serverError(e);
    // A stream already begun ends with the error as its last event.
    if (stream) return stream.fail(err.body());
    throw err;
  }
  // Past the request timeout the client got a 504, never this reply: recording it would train on a
  // turn no caller saw (and rewards for that episode would judge another transcript).
  if (expired?.aborted) return call?.expire();
  call?.finish(c);
  if (stream) {
    stream.finish(c);
    const log = ctx.gate.batcher.stats.streams;
    log.push({
      firstChunkAtTokens: stream.firstChunkAtTokens,
      tokens: c.choices.reduce((n, x) => n + x.tokens.length, 0),
    });
    if (log.length > 100) log.shift();
    return;
  }
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
