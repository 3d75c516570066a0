// The two modes without a trainer. `explore`: the explorer alone fills the buffer with experiences
// (from the policy, a checkpoint or an OpenAI-compatible endpoint), e.g. to collect data for an
// offline `train` run or to curate in the editor. `bench`: evaluate a model on the eval set and
// write the report. Neither moves weights, so both run in the coordinator's own process.
import { InputError } from '../../core/errors.js';
import { join } from 'node:path';
import type { RunConfig } from '../../core/config.js';
import type { Task } from '../../core/types.js';
import { logger } from '../../core/log.js';
import { saveTokenizer, loadTokenizer } from '../../model/tokenizer/index.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import { openStore } from '../../buffer/storage/index.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { OpenAIRolloutModel } from '../../explorer/openai-model.js';
import type { RolloutModel } from '../../explorer/workflow.js';
import { describeAccuracy, evaluate } from '../evaluate.js';
import { writeReport } from '../monitor.js';
import type { RunSummary } from '../run-types.js';
import type { PlacementContext } from './entry.js';
import { openExplorerHalf } from '../explorer-half.js';
import { runExplorerLoop, sharedWeights } from '../../explorer/explorer-loop.js';
import { loadTasks } from '../setup/tasks.js';
import { initialModel, makeTokenizer, tokenizerTexts } from '../setup/model.js';
import { evalOptions } from '../setup/explorer.js';
import { stagesOf } from '../setup/trainer.js';

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
  const { cfg, runId, runDir, metrics } = c;
  const pools = loadTasks(cfg);
  // Mode bench is an evaluation: without an eval set it would measure nothing.
  if (cfg.mode === 'bench' && pools.eval.length === 0)
    throw new InputError(`mode bench needs an eval set; ${pools.evalSet}`, { field: 'eval' });
  const tok = c.resumed ? loadTokenizer(runDir) : makeTokenizer(cfg, tokenizerTexts(pools));
  if (!c.resumed) saveTokenizer(tok, runDir);
  const rm = rolloutModel(cfg, tok, [...pools.train, ...pools.eval]);
  log.info(`mode ${cfg.mode}: rollout model is ${rm.what}`);
  const evalOpts = evalOptions(cfg);
  let exploreSteps = 0;
  try {
    if (cfg.mode === 'explore') {
      const store = await openStore(cfg.buffer.storage === 'sqlite' ? c.dbPath : cfg.buffer.storage);
      try {
        await store.putTasks(runId, pools.train);
        const stage = stagesOf(cfg)[0]!;
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
        const { explorer } = half;
        // A resumed run numbers its steps on from the ones appended: group ids (run:split:step:task) and
        // synthesis rounds are never reused (counting from 0 again put two steps' rows in one group).
        explorer.step = done;
        const steps = cfg.stages?.reduce((a, s) => a + (s.steps ?? 0), 0) || cfg.trainer.steps;
        // The explorer driver every placement runs, with one fixed model: no version to wait for.
        exploreSteps = done;
        if (steps > done)
          ({ target: exploreSteps } = await runExplorerLoop({
            explorer,
            target: done,
            requiredVersion: () => rm.model.version,
            ...sharedWeights(
              () => rm.model.version,
              () => rm.model,
            ),
            maxSteps: steps - done,
            onStep: (next) => store.setState(runId, 'explore_steps', next),
            onMetrics: (rec) => metrics.write(rec),
            signal: c.opts.signal,
          }));
      } finally {
        await store.close();
      }
    }
    // Mode explore without an eval set (pools.evalSet says why) evaluates nothing.
    const r = pools.eval.length ? await evaluate(rm.model, pools.eval, pools.reward, evalOpts) : null;
    if (r) {
      metrics.write({ kind: 'eval', stage: cfg.mode, step: 0, ...r });
      log.info(`${cfg.mode}: ${describeAccuracy(r)} on ${pools.eval.length} eval tasks`);
    }
    const summary: RunSummary = {
      run_id: runId,
      run_dir: runDir,
      base_accuracy: r?.accuracy ?? null,
      final_accuracy: r?.accuracy ?? null,
      evals: r ? [{ stage: cfg.mode, step: 0, accuracy: r.accuracy, mean_reward: r.mean_reward }] : [],
      eval_set: pools.evalSet,
      trainer_steps: 0,
      explore_steps: exploreSteps,
      wall_seconds: (Date.now() - c.t0) / 1000,
      // monitor.report: false writes no HTML report (the summary's report is then '').
      report: cfg.monitor.report ? join(runDir, 'report.html') : '',
      checkpoint: cfg.model.checkpoint ?? '',
      warnings: [],
    };
    if (summary.report)
      writeReport(summary.report, `RFT Studio ${cfg.mode} run ${runId}`, metrics.read(), {
        mode: cfg.mode,
        model: rm.what,
        accuracy: r?.accuracy ?? 'none (no eval set)',
        eval_set: summary.eval_set,
        explore_steps: exploreSteps,
      });
    return summary;
  } finally {
    rm.dispose();
  }
}
