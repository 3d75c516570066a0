// Mode serve (issue 43), placement memory: the run's policy answers an OpenAI-compatible endpoint
// (explorer/openai-server/) instead of sampling a taskset; the calls its callers reward become the
// experiences the trainer trains on, one step per batch, and each new version is served from the
// next request on (requests are held while a step changes the weights, so none mixes versions).
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../core/errors.js';
import { logger } from '../../core/log.js';
import { openStore, type ExperienceStore } from '../../buffer/storage/index.js';
import { makeSampler } from '../../buffer/sampler/index.js';
import { saveTokenizer } from '../../model/tokenizer/index.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import type { Transformer } from '../../model/transformer.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { resolveReward } from '../../explorer/reward-resolve.js';
import { EpisodeBook } from '../../explorer/openai-server/episodes.js';
import { GroupSink } from './serve-groups.js';
import { startOpenAIServer, type OpenAIServer } from '../../explorer/openai-server/http.js';
import { PolicyGate } from '../../explorer/openai-server/policy.js';
import { serveSection, type ServeConfig } from '../../core/config-serve.js';
import { evaluate } from '../evaluate.js';
import { openStage, runStages, trainStage, type Placement } from '../run-loop.js';
import type { RunSummary } from '../run-types.js';
import { evalOptions } from '../setup/explorer.js';
import { initialModel, makeTokenizer, tokenizerTexts } from '../setup/model.js';
import { publishCheckpoint } from '../setup/run-data.js';
import { loadTasks, type TaskPools } from '../setup/tasks.js';
import type { Stage } from '../setup/trainer.js';
import { runContext, type PlacementContext } from './entry.js';

const log = logger('serve');
/** How often the buffer is looked at for a batch, and unrewarded episodes for the timeout. */
const POLL_MS = 200;

export async function executeServe(c: PlacementContext): Promise<RunSummary> {
  const { cfg, runDir, dbPath } = c;
  if (c.resumeFrom) throw new InputError('a serve run cannot be resumed yet: start a new one from its checkpoint');
  // The taskset gives the eval set (base and final accuracy); the callers' calls are the training tasks.
  const pools = await loadTasks(cfg);
  const tok = makeTokenizer(cfg, tokenizerTexts(pools));
  saveTokenizer(tok, runDir);
  const store = await openStore(cfg.buffer.storage === 'sqlite' ? dbPath : cfg.buffer.storage);
  const run = new ServeRun(c, pools, tok, store);
  try {
    await run.open();
    const { summary } = await runStages(cfg, run, runContext(c, pools, { reportExtra: run.extra() }));
    return summary;
  } finally {
    await run.close();
    await store.close();
  }
}

class ServeRun implements Placement {
  readonly finalWhenStopped = true;
  private model!: Transformer;
  private rollout!: LocalRolloutModel;
  private gate!: PolicyGate;
  private book!: EpisodeBook;
  private server?: OpenAIServer;
  private sweeper?: NodeJS.Timeout;
  private version = 0;
  private stageIndex = 0;
  private baseAcc: number | undefined;
  private algorithm: { name: string; params: Record<string, unknown> };
  private readonly serve: ServeConfig;

  constructor(
    private readonly c: PlacementContext,
    private readonly pools: TaskPools,
    private readonly tok: Tokenizer,
    private readonly store: ExperienceStore,
  ) {
    this.algorithm = c.cfg.algorithm;
    this.serve = serveSection.parse(c.cfg.serve ?? {});
  }

  /** For the report (the episode counts are in metrics.jsonl's `serve` records). */
  extra(): Record<string, string> {
    return { serve_url: this.server?.baseURL ?? '' };
  }

  private token(): { token: string; file: string } {
    const f = this.serve.token_file;
    if (f) {
      const token = readFileSync(f, 'utf8').trim();
      if (!token) throw new InputError('the token file is empty', { file: f, field: 'serve.token_file' });
      return { token, file: f };
    }
    const file = join(this.c.runDir, 'serve-token');
    const token = randomBytes(24).toString('base64url');
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    return { token, file };
  }

  async open(): Promise<void> {
    const { cfg, runId, metrics } = this.c;
    this.model = initialModel(cfg, this.tok, this.pools.eval);
    this.rollout = new LocalRolloutModel(this.model, this.tok, this.version);
    this.gate = new PolicyGate({ model: this.rollout, transformer: this.model }, cfg.name);
    const sink = new GroupSink({
      groupSize: cfg.explorer.repeat_times,
      algorithm: () => this.algorithm,
      write: async (exps) => {
        await this.store.appendExperiences(exps);
      },
    });
    this.book = new EpisodeBook({
      runId,
      sink: (exps) => sink.add(exps),
      rewardTimeoutMs: this.serve.reward_timeout_seconds * 1000,
    });
    const { token, file } = this.token();
    const l = this.serve.limits;
    this.server = await startOpenAIServer({
      gate: this.gate,
      token,
      host: this.serve.host,
      port: this.serve.port,
      limits: {
        maxBodyBytes: l.max_body_bytes,
        maxConcurrent: l.max_concurrent,
        maxTokens: l.max_tokens,
        requestTimeoutMs: l.request_timeout_seconds * 1000,
      },
      episodes: this.book,
      rewardFn: cfg.workflow.reward ? resolveReward(cfg.workflow.reward) : undefined,
    });
    this.sweeper = setInterval(() => {
      const n = this.book.sweep();
      if (n) metrics.write({ kind: 'serve', dropped: n, dropped_total: this.book.stats.dropped });
    }, POLL_MS);
    this.sweeper.unref();
    writeFileSync(
      join(this.c.runDir, 'serve.json'),
      JSON.stringify({ base_url: this.server.baseURL, token_file: file }),
    );
    log.info(`serving ${cfg.name} (v${this.version}) at ${this.server.baseURL} (bearer token in ${file})`);
    metrics.write({ kind: 'serve', base_url: this.server.baseURL });
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.server?.close();
    this.model?.dispose();
  }

  async nextStage(): Promise<number> {
    return this.stageIndex;
  }
  async startEvaluated(): Promise<boolean> {
    return false;
  }
  async getBase(): Promise<number | undefined> {
    return this.baseAcc;
  }
  async setBase(a: number): Promise<void> {
    this.baseAcc = a;
  }

  async evaluate() {
    const result = await this.gate.use(() =>
      evaluate(this.rollout, this.pools.eval, this.pools.reward, evalOptions(this.c.cfg)),
    );
    return { result, step: this.version };
  }

  async finish() {
    return {
      trainerSteps: this.version,
      exploreSteps: this.book.stats.rewarded,
      checkpoint: join(this.c.runDir, 'checkpoints', `v${this.version}`),
    };
  }

  async runStage(si: number, stage: Stage): Promise<boolean> {
    const { cfg, runId, metrics, opts, registry, runDir } = this.c;
    const model = this.model;
    this.algorithm = stage.algorithm;
    // A served "explore step" is one task's group (explorer.repeat_times episodes): the batch is
    // checked against that, not against tasks_per_step, which a serve run does not read.
    const stageCfg = { ...cfg, explorer: { ...cfg.explorer, tasks_per_step: 1 } };
    const parts = await openStage(stageCfg, stage, model, this.tok, this.store, runId, () => model.clone());
    const sampler = makeSampler(this.store, parts.samplerConfig);
    let release: (() => void) | undefined;
    const checkpoint = async () => {
      const dir = join(runDir, 'checkpoints', `v${this.version}`);
      await publishCheckpoint({
        store: this.store,
        runId,
        model,
        tok: this.tok,
        dir,
        meta: { version: this.version, step: this.version, stage: stage.name, stage_index: si + 1, stage_step: 0 },
      });
      await registry.addCheckpoint(runId, { version: this.version, path: dir, step: this.version });
      await registry.setLastStep(runId, this.version);
    };
    let r: Awaited<ReturnType<typeof trainStage>>;
    try {
      r = await trainStage(
        {
          cfg,
          stage,
          model,
          tok: this.tok,
          evalTasks: this.pools.eval,
          reward: this.pools.reward,
          metrics,
          step: this.version,
          stageStep: 0,
        },
        parts,
        {
          sampler,
          syncInterval: 1,
          signal: opts.signal,
          // The callers feed the buffer: wait for a batch of rewarded episodes within the staleness
          // bound, then hold the server (requests in flight finish first) while the step trains.
          explore: async () => {
            while (!opts.signal?.aborted && (await sampler.waitStatus(parts.batchSize, this.version)) !== null)
              await new Promise((res) => setTimeout(res, POLL_MS));
            if (opts.signal?.aborted) return null;
            release = await this.gate.hold();
            return parts.batchSize;
          },
          publishWeights: async (v, _stageStep, stageDone) => {
            this.version = v;
            this.rollout.version = v;
            release?.();
            release = undefined;
            metrics.write({ kind: 'serve', version: v, ...this.book.stats });
            if (stageDone) await checkpoint();
          },
        },
      );
    } finally {
      release?.();
    }
    parts.dispose();
    if (!r.stageDone) {
      await checkpoint();
      return true;
    }
    this.stageIndex = si + 1;
    return false;
  }
}
