// Mode serve (issue 43), placement memory: the run's policy answers an OpenAI-compatible endpoint
// (serve-endpoint.ts) instead of sampling a taskset; the calls its callers reward become the
// experiences the trainer trains on, one step per batch, and each new version is served from the
// next request on (requests are held while a step changes the weights, so none mixes versions).
// A stopped run resumes (`rft resume`) from its newest checkpoint with its episodes' state.
// Placement checkpoint serves from the explorer process instead (serve-process.ts).
import { join } from 'node:path';
import { openStore, type ExperienceStore } from '../../buffer/storage/index.js';
import { makeSampler } from '../../buffer/sampler/index.js';
import { loadCheckpoint } from '../../model/checkpoint.js';
import { frozenOutsideHeap } from '../../model/external-weights.js';
import { loadTokenizer, saveTokenizer } from '../../model/tokenizer/index.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import type { Transformer } from '../../model/transformer.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { PolicyGate } from '../../explorer/openai-server/policy.js';
import { servedStageConfig } from '../../core/config-serve.js';
import { evaluate } from '../evaluate.js';
import { openStage, runStages, trainStage, type Placement } from '../run-loop.js';
import type { RunSummary } from '../run-types.js';
import { evalOptions } from '../setup/explorer.js';
import { initialModel, makeTokenizer, tokenizerTexts } from '../setup/model.js';
import { publishCheckpoint, stageCheckpointMeta } from '../setup/run-data.js';
import { loadTasks, type TaskPools } from '../setup/tasks.js';
import type { Stage } from '../setup/trainer.js';
import { runContext, type PlacementContext } from './entry.js';
import { RunState } from '../run-state.js';
import { openServeEndpoint, type ServeEndpoint } from './serve-endpoint.js';

/** How often the buffer is looked at for a batch. */
const POLL_MS = 200;

export async function executeServe(c: PlacementContext): Promise<RunSummary> {
  const { cfg, runDir, dbPath, resumeFrom } = c;
  // The taskset gives the eval set (base and final accuracy); the callers' calls are the training tasks.
  const pools = await loadTasks(cfg);
  const tok = resumeFrom ? loadTokenizer(runDir) : makeTokenizer(cfg, tokenizerTexts(pools));
  if (!resumeFrom) saveTokenizer(tok, runDir);
  const store = await openStore(cfg.buffer.storage === 'sqlite' ? dbPath : cfg.buffer.storage);
  const run = new ServeRun(c, pools, tok, store);
  try {
    await run.open();
    const state = new RunState(store, c.runId);
    const { summary } = await runStages(cfg, run, runContext(c, pools, state, { reportExtra: run.extra() }));
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
  private endpoint?: ServeEndpoint;
  private version: number;
  private stageIndex: number;
  private stageStep: number;
  private algorithm: { name: string; params: Record<string, unknown> };

  constructor(
    private readonly c: PlacementContext,
    private readonly pools: TaskPools,
    private readonly tok: Tokenizer,
    private readonly store: ExperienceStore,
  ) {
    this.algorithm = c.cfg.algorithm;
    const meta = c.resumeFrom?.meta;
    this.version = meta?.version ?? 0;
    this.stageIndex = typeof meta?.stage_index === 'number' ? meta.stage_index : 0;
    this.stageStep = typeof meta?.stage_step === 'number' ? meta.stage_step : 0;
  }

  /** For the report (the episode counts are in metrics.jsonl's `serve` records). */
  extra(): Record<string, string> {
    return { serve_url: this.endpoint?.server.baseURL ?? '' };
  }

  async open(): Promise<void> {
    const { cfg, runId, runDir, metrics, resumeFrom } = this.c;
    // A resumed run serves its newest weights (LoRA: the frozen base outside the heap, as at the start).
    this.model = resumeFrom
      ? loadCheckpoint(resumeFrom.dir, { external: frozenOutsideHeap(cfg.model.lora) }).model
      : initialModel(cfg, this.tok, this.pools.eval);
    this.rollout = new LocalRolloutModel(this.model, this.tok, this.version);
    this.gate = new PolicyGate({ model: this.rollout, transformer: this.model }, cfg.name);
    this.endpoint = await openServeEndpoint({
      cfg,
      runId,
      runDir,
      store: this.store,
      metrics,
      gate: this.gate,
      algorithm: () => this.algorithm,
    });
  }

  async close(): Promise<void> {
    await this.endpoint?.close();
    this.model?.dispose();
  }

  async nextStage(): Promise<number> {
    return this.stageIndex;
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
      exploreSteps: this.endpoint?.book.stats.rewarded ?? 0,
      checkpoint: join(this.c.runDir, 'checkpoints', `v${this.version}`),
    };
  }

  async runStage(si: number, stage: Stage): Promise<boolean> {
    const { cfg, runId, metrics, opts, registry, runDir, resumeFrom } = this.c;
    const model = this.model;
    const book = this.endpoint!.book;
    this.algorithm = stage.algorithm;
    const parts = await openStage(
      servedStageConfig(cfg),
      stage,
      model,
      this.tok,
      this.store,
      runId,
      () => model.clone(),
      resumeFrom?.dir,
    );
    const sampler = makeSampler(this.store, parts.samplerConfig);
    let release: (() => void) | undefined;
    const checkpoint = async (done: boolean) => {
      const dir = join(runDir, 'checkpoints', `v${this.version}`);
      const meta = stageCheckpointMeta(this.version, stage.name, si, this.stageStep, done);
      await publishCheckpoint({ store: this.store, runId, model, tok: this.tok, dir, meta, critic: parts.trainer });
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
          stageStep: this.stageStep,
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
          publishWeights: async (v, stageStep, stageDone) => {
            this.version = v;
            this.stageStep = stageStep;
            this.rollout.version = v;
            release?.();
            release = undefined;
            metrics.write({ kind: 'serve', version: v, ...book.stats });
            if (stageDone) await checkpoint(true);
          },
        },
      );
    } finally {
      release?.();
    }
    parts.dispose();
    if (!r.stageDone) {
      // Stopped: the resume point (rft resume continues at this stage step).
      await checkpoint(false);
      return true;
    }
    this.stageIndex = si + 1;
    return false;
  }
}
