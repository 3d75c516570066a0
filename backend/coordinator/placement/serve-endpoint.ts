// The endpoint half of a serve run (issue 43), the same in every placement that serves: the bearer
// token, the episode book and the GRPO group sink writing rewarded episodes into the run's buffer,
// the OpenAI server, the reward-timeout sweep, serve.json, and the state a stop keeps for `rft
// resume` (open episodes, closed ids, rows waiting for their group: store state `serve_episodes`).
// placement memory (serve.ts) trains beside it in the same process; placement checkpoint runs it in
// the explorer process (serve-process.ts) while the trainer process trains.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunConfig } from '../../core/config.js';
import { serveSection } from '../../core/config-serve.js';
import { InputError } from '../../core/errors.js';
import { logger } from '../../core/log.js';
import type { Experience } from '../../core/types.js';
import type { ExperienceStore } from '../../buffer/storage/index.js';
import { resolveReward } from '../../explorer/reward-resolve.js';
import { EpisodeBook, type EpisodeBookState } from '../../explorer/openai-server/episodes.js';
import { startOpenAIServer, type OpenAIServer } from '../../explorer/openai-server/http.js';
import type { PolicyGate } from '../../explorer/openai-server/policy.js';
import { GroupSink } from './serve-groups.js';

const log = logger('serve');
/** How often unrewarded episodes are looked at for the reward timeout. */
const SWEEP_MS = 200;
/** Store state key of what a stopped serve run keeps. */
const SERVE_STATE = 'serve_episodes';
/** How often (in sweeps) the episodes' state is written when it changed: a process killed before
 *  its close (a stop that lands while a checkpoint load blocks the event loop past the stop's grace)
 *  loses at most this much. */
const PERSIST_EVERY_SWEEPS = 5;

interface ServeState {
  book: EpisodeBookState;
  groups: [string, Experience[]][];
}

export interface ServeEndpoint {
  book: EpisodeBook;
  server: OpenAIServer;
  /** Stops serving and keeps the episodes' state in the buffer (a resume takes it back). */
  close(): Promise<void>;
}

function bearerToken(cfg: RunConfig, runDir: string): { token: string; file: string } {
  const f = serveSection.parse(cfg.serve ?? {}).token_file;
  if (f) {
    const token = readFileSync(f, 'utf8').trim();
    if (!token) throw new InputError('the token file is empty', { file: f, field: 'serve.token_file' });
    return { token, file: f };
  }
  // A resumed run (or a restarted explorer process) keeps the token its callers already hold.
  const file = join(runDir, 'serve-token');
  try {
    const kept = readFileSync(file, 'utf8').trim();
    if (kept) return { token: kept, file };
  } catch {
    // none yet: made below
  }
  const token = randomBytes(24).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return { token, file };
}

export async function openServeEndpoint(o: {
  cfg: RunConfig;
  runId: string;
  runDir: string;
  store: ExperienceStore;
  metrics: { write(rec: Record<string, unknown>): void };
  gate: PolicyGate;
  algorithm: () => { name: string; params: Record<string, unknown> };
}): Promise<ServeEndpoint> {
  const { cfg, runId, runDir, store, metrics } = o;
  const serve = serveSection.parse(cfg.serve ?? {});
  const sink = new GroupSink({
    groupSize: cfg.explorer.repeat_times,
    algorithm: o.algorithm,
    write: async (exps) => {
      await store.appendExperiences(exps);
      // At once, so a resume never writes this group's rows a second time (the episode being
      // rewarded is kept as rewarded meanwhile: EpisodeBook.snapshot). A failed save is not a failed
      // write: the rows are in, and the next save carries the state.
      await keep();
    },
  });
  const book = new EpisodeBook({
    runId,
    sink: (exps) => sink.add(exps),
    rewardTimeoutMs: serve.reward_timeout_seconds * 1000,
    onClosed: () => keep(),
  });
  // The state is kept as it changes (each group written, and every few sweeps), not only at close.
  let written = '';
  let closed = false;
  let writing: Promise<void> = Promise.resolve();
  const persistNow = async (): Promise<void> => {
    if (closed) return;
    const state: ServeState = { book: book.snapshot(), groups: sink.snapshot() };
    const text = JSON.stringify(state);
    if (text === written) return;
    await store.setState(runId, SERVE_STATE, state);
    written = text; // only once saved: a failed save is tried again
  };
  // One write at a time, in order: an older snapshot never lands after a newer one.
  const persist = (): Promise<void> => {
    writing = writing.catch(() => undefined).then(persistNow);
    return writing;
  };
  // Best effort between calls: a failed save is said, and the next one carries the state.
  const keep = (): Promise<void> =>
    persist().catch((e) => log.warn(`could not keep the episodes' state: ${(e as Error).message}`));
  const kept = await store.getState<ServeState>(runId, SERVE_STATE);
  if (kept) {
    book.restore(kept.book);
    sink.restore(kept.groups);
    written = JSON.stringify(kept);
    log.info(
      `continuing ${kept.book.open.length} open episode(s) and ${sink.pending} rewarded row(s) waiting for their group`,
    );
  }
  const { token, file } = bearerToken(cfg, runDir);
  const l = serve.limits;
  const server = await startOpenAIServer({
    gate: o.gate,
    token,
    host: serve.host,
    port: serve.port,
    limits: {
      maxBodyBytes: l.max_body_bytes,
      maxConcurrent: l.max_concurrent,
      maxTokens: l.max_tokens,
      requestTimeoutMs: l.request_timeout_seconds * 1000,
    },
    episodes: book,
    rewardFn: cfg.workflow.reward ? resolveReward(cfg.workflow.reward) : undefined,
  });
  let sweeps = 0;
  const sweeper = setInterval(() => {
    const n = book.sweep();
    if (n) metrics.write({ kind: 'serve', dropped: n, dropped_total: book.stats.dropped });
    if (++sweeps % PERSIST_EVERY_SWEEPS === 0) {
      keep();
    }
  }, SWEEP_MS);
  sweeper.unref();
  writeFileSync(join(runDir, 'serve.json'), JSON.stringify({ base_url: server.baseURL, token_file: file }));
  log.info(`serving ${cfg.name} (v${o.gate.version}) at ${server.baseURL} (bearer token in ${file})`);
  metrics.write({ kind: 'serve', base_url: server.baseURL });
  return {
    book,
    server,
    close: async () => {
      clearInterval(sweeper);
      // Closed first, so no call or reward lands after the state is taken.
      await server.close();
      // A reward being written when the server closed lands before the state is taken.
      await book.settle();
      await persist();
      closed = true;
      metrics.write({ kind: 'serve', stopped: true, ...book.stats, waiting_for_group: sink.pending });
    },
  };
}
