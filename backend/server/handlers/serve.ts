// serve/* requests: a serve run's endpoint (its serve.json), the episodes it waits to be rewarded
// for, and a person's reward for one. The run answers in its own process: these go to its HTTP
// endpoint with its bearer token (GET /v1/rft/episodes, POST /v1/rft/rewards), the same path an
// agent's rewards take, so a rating is accepted or refused (already rewarded) as theirs are.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RpcHost } from '../rpc.js';
import type { WorkspacePaths } from '../confine.js';
import type { ServedEpisode, ServeInfo, ServedRewardResult } from '../../core/protocol.js';
import { InputError } from '../../core/errors.js';
import { NotAvailableError } from '../errors.js';
import { loadTokenizer, TOKENIZER_FILE } from '../../model/tokenizer/index.js';
import { runId as checkRunId } from './runs.js';

interface WaitingWire {
  episode_id: string;
  task_id: string;
  calls: number;
  branches: number;
  last_activity: number;
  messages: ServedEpisode['messages'];
  tokens: number[];
  mask: number[];
  logprobs: number[];
}

function serveInfo(paths: WorkspacePaths, id: string): ServeInfo | null {
  const file = join(paths.given, '.rft', 'runs', id, 'serve.json');
  if (!existsSync(file)) return null;
  let j: { base_url?: unknown; token_file?: unknown };
  try {
    j = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InputError(`not valid JSON: ${(e as Error).message}`, { file });
  }
  if (typeof j.base_url !== 'string' || typeof j.token_file !== 'string')
    throw new InputError('expected base_url and token_file', { file });
  const token = readFileSync(j.token_file, 'utf8').trim();
  return { runId: id, baseUrl: j.base_url, tokenFile: j.token_file, token };
}

/** A request to the run's endpoint; a run that no longer answers is said to be so, by name. */
async function call(info: ServeInfo, path: string, body?: unknown): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`${info.baseUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (e) {
    throw new NotAvailableError(
      `run '${info.runId}' is not serving (its endpoint ${info.baseUrl} does not answer: ${(e as Error).message})`,
    );
  }
  const j = (await res.json().catch(() => ({}))) as { error?: { message?: string } };
  if (!res.ok) throw new InputError(`run '${info.runId}' answered ${res.status}: ${j.error?.message ?? ''}`);
  return j;
}

export function registerServe(rpc: RpcHost, paths: WorkspacePaths): void {
  const needInfo = (id: unknown): ServeInfo => {
    const info = serveInfo(paths, checkRunId(id));
    if (!info)
      throw new NotAvailableError(`run '${String(id)}' is not a serve run, or not serving yet (no serve.json)`);
    return info;
  };
  rpc.on('serve/info', async (p) => serveInfo(paths, checkRunId(p.runId)));
  rpc.on('serve/episodes', async (p) => {
    const info = needInfo(p.runId);
    const { data } = (await call(info, '/rft/episodes')) as { data: WaitingWire[] };
    const tokFile = join(paths.given, '.rft', 'runs', info.runId, TOKENIZER_FILE);
    const tok = existsSync(tokFile) ? loadTokenizer(tokFile) : null;
    const episodes: ServedEpisode[] = data.map((w) => ({
      episodeId: w.episode_id,
      taskId: w.task_id,
      calls: w.calls,
      branches: w.branches,
      lastActivity: w.last_activity,
      messages: w.messages,
      tokens: w.tokens,
      mask: w.mask,
      logprobs: w.logprobs,
      ...(tok ? { pieces: w.tokens.map((t) => tok.decode([t])) } : {}),
    }));
    return { runId: info.runId, episodes };
  });
  rpc.on('serve/reward', async (p): Promise<ServedRewardResult> => {
    const info = needInfo(p.runId);
    if (typeof p.episodeId !== 'string' || !p.episodeId) throw new InputError('required', { field: 'episodeId' });
    if (typeof p.reward !== 'number' || !Number.isFinite(p.reward))
      throw new InputError(`must be a finite number, got ${JSON.stringify(p.reward)}`, { field: 'reward' });
    const r = (await call(info, '/rft/rewards', { rewards: [{ episode_id: p.episodeId, reward: p.reward }] })) as {
      results: { status: 'accepted' | 'refused'; reason?: string; reward?: number }[];
    };
    const item = r.results[0]!;
    return {
      episodeId: p.episodeId,
      status: item.status,
      ...(item.reason ? { reason: item.reason } : {}),
      ...(item.reward !== undefined ? { reward: item.reward } : {}),
    };
  });
}
