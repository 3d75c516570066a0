// The two modes without a trainer. `explore`: the explorer alone fills the buffer with experiences
// (from the policy, a checkpoint or an OpenAI-compatible endpoint), e.g. to collect data for an
// offline `train` run or to curate in the editor. `bench`: evaluate a model on the eval set and
// write the report. Neither moves weights, so both run in the coordinator's own process, under the
// run loop every placement runs (run-loop.ts `runStages`, as a placement that does not train).
import { InputError } from '../../core/errors.js';
import type { RunConfig } from '../../core/config.js';
import type { Task } from '../../core/types.js';
import { logger } from '../../core/log.js';
import { saveTokenizer, loadTokenizer } from '../../model/tokenizer/index.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import { openStore, type ExperienceStore } from '../../buffer/storage/index.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { OpenAIRolloutModel } from '../../explorer/openai-model.js';
import type { RolloutModel } from '../../explorer/workflow.js';
import { evaluate } from '../evaluate.js';
import { runStages, type Placement } from '../run-loop.js';
import { RunState } from '../run-state.js';
import type { RunSummary } from '../run-types.js';
import { runContext, type PlacementContext } from './entry.js';
import { openExplorerHalf } from '../explorer-half.js';
import { runExplorerLoop, sharedWeights } from '../../explorer/explorer-loop.js';
import { loadTasks, type TaskPools } from '../setup/tasks.js';
import { initialModel, makeTokenizer, tokenizerTexts } from '../setup/model.js';
import { evalOptions } from '../setup/explorer.js';
import { stagesOf, type Stage } from '../setup/trainer.js';

const log = logger('coordinator');

/** The rollout model of a run without a trainer: the endpoint when configured, else the local model. */
function rolloutModel(
  cfg: RunConfig,
  tok: Tokenizer,
  tasks: Task[],
): { model: RolloutModel; dispose: () => void; what: string } {
  const ep = cfg.explorer.endpoint;
  if (ep) {
    const apiKey = ep.api_key_env ? process.env[ep.api_key_env] : undefined;
    if (ep.api_key_env && !apiKey)
      throw new Error(`explorer.endpoint.api_key_env: the environment variable ${ep.api_key_env} is not set`);
    return {
      model: new OpenAIRolloutModel({
        baseUrl: ep.base_url,
        model: ep.model,
        tokenizer: tok,
        apiKey,
        concurrency: ep.concurrency,
        timeoutMs: ep.timeout_ms,
      }),
      dispose: () => undefined,
      what: `endpoint ${ep.base_url} (${ep.model})`,
    };
  }
  const m = initialModel(cfg, tok, tasks);
  return {
    model: new LocalRolloutModel(m, tok, 0),
    dispose: () => m.dispose(),
    what: cfg.model.checkpoint ? `checkpoint ${cfg.model.checkpoint}` : `a fresh ${cfg.model.size} model`,
  };
}

export async function executeWithoutTrainer(c: PlacementContext): Promise<RunSummary> {
  const { cfg, runId, runDir } = c;
  const pools = await loadTasks(cfg);
  // Mode bench is an evaluation: without an eval set it would measure nothing.
  if (cfg.mode === 'bench' && pools.eval.length === 0)
    throw new InputError(`mode bench needs an eval set; ${pools.evalSet}`, { field: 'eval' });
  const tok = c.resumed ? loadTokenizer(runDir) : makeTokenizer(cfg, tokenizerTexts(pools));
  if (!c.resumed) saveTokenizer(tok, runDir);
  const rm = rolloutModel(cfg, tok, [...pools.train, ...pools.eval]);
  log.info(`mode ${cfg.mode}: rollout model is ${rm.what}`);
  const evalOpts = evalOptions(cfg);
  // Mode explore's buffer (bench writes none).
  const store =
    cfg.mode === 'explore' ? await openStore(cfg.buffer.storage === 'sqlite' ? c.dbPath : cfg.buffer.storage) : null;
  let exploreSteps = 0;
  let explored = false;
  try {
    // The run loop every placement runs, with no trainer: explore's one stage explores, bench's runs
    // nothing; the one evaluation comes after (the weights never change).
    const placement: Placement = {
      trains: false,
      nextStage: async () => (store && !explored ? 0 : stagesOf(cfg).length),
      evaluate: async () => ({ result: await evaluate(rm.model, pools.eval, pools.reward, evalOpts), step: 0 }),
      // A stopped explore run still reports the model's accuracy (the weights are the same).
      finalWhenStopped: true,
      runStage: async (_si, stage) => {
        explored = true;
        exploreSteps = await exploreStage(c, store!, pools, tok, stage, rm.model);
        return c.opts.signal?.aborted === true;
      },
      finish: async () => ({ trainerSteps: 0, exploreSteps, checkpoint: cfg.model.checkpoint ?? '' }),
    };
    const { summary } = await runStages(
      cfg,
      placement,
      // No trainer: nothing to resume between stages; the one evaluation is both base and final.
      runContext(c, pools, store ? new RunState(store, runId) : RunState.inMemory(runId), {
        reportTitle: `RFT Studio ${cfg.mode} run ${runId}`,
        reportExtra: { model: rm.what },
      }),
    );
    return summary;
  } finally {
    await store?.close();
    rm.dispose();
  }
}

/** Mode explore's one stage: its steps on the explorer driver with the fixed model; the steps explored so far. */
async function exploreStage(
  c: PlacementContext,
  store: ExperienceStore,
  pools: TaskPools,
  tok: Tokenizer,
  stage: Stage,
  model: RolloutModel,
): Promise<number> {
  const { cfg, runId, metrics } = c;
  await store.putTasks(runId, pools.train);
  // A resumed explore run continues after the steps it already appended, its selector where it stopped.
  const done = c.resumed ? ((await store.getState<number>(runId, 'explore_steps')) ?? 0) : 0;
  // No trainer: the refill target stays 0 (a step is explored once), and no file is watched.
  const half = await openExplorerHalf({
    cfg,
    runId,
    store,
    pools,
    tok,
    metrics,
    algorithm: () => stage.algorithm,
    seed: cfg.seed + 1 + done,
    restore: c.resumed,
    watch: false,
  });
  try {
    const steps = cfg.stages?.reduce((a, s) => a + (s.steps ?? 0), 0) || cfg.trainer.steps;
    if (steps <= done) return done;
    // A resumed run numbers its steps on from the ones appended: group ids (run:split:step:task) and
    // synthesis rounds are never reused (counting from 0 again put two steps' rows in one group).
    const r = await runExplorerLoop({
      explorer: half.explorer,
      target: done,
      requiredVersion: () => model.version,
      ...sharedWeights(
        () => model.version,
        () => model,
      ),
      maxSteps: steps - done,
      onStep: (next) => store.setState(runId, 'explore_steps', next),
      onMetrics: (rec) => metrics.write(rec),
      signal: c.opts.signal,
    });
    return r.target;
  } finally {
    await half.close();
  }
}
