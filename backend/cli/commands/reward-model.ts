// `rft reward-model train`: the learned reward model from what people curated in the editor: the
// run's preference pairs (curation, rating, long2short: backend/buffer/pairs.ts) and its ratings.
// Whole tasks are split three ways: training, validation (picks the step whose weights are kept,
// and the threshold of "judged correct") and held out (no rating or pair of theirs is trained on or
// picks anything). The held-out pairwise accuracy (score(chosen) > score(rejected)) is reported with
// its standard error beside the length baseline measured on the same pairs. Too few pairs to learn
// or to measure anything are refused with the counts. The model is saved as a checkpoint usable as
// `reward: reward_model:<out>`, its threshold in rft.json.
import { InputError } from '../../core/errors.js';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { command } from '../command.js';
import { initEngine } from '../../model/engine.js';
import { presetConfig } from '../../model/config.js';
import { Transformer } from '../../model/transformer.js';
import { saveCheckpoint } from '../../model/checkpoint.js';
import { loadTokenizer, type Tokenizer } from '../../model/tokenizer/index.js';
import { openStore, resolveBufferUrl, schemeOf, type ExperienceStore } from '../../buffer/storage/index.js';
import type { RewardModelReport } from '../../core/protocol.js';
import type { PreferencePair } from '../../explorer/reward-model/data.js';
import { trainRewardModel } from '../../explorer/reward-model/train.js';
import { policyLogprobScores, rewardModelFromPolicy } from '../../explorer/reward-model/policy-init.js';
import { pairScores } from '../../explorer/reward-model/pair-scores.js';
import {
  accuracyStderr,
  fitThreshold,
  lengthBaseline,
  pairAccuracy,
} from '../../explorer/reward-model/pair-metrics.js';
import { FEW_HELDOUT_PAIRS, MIN_TRAIN_PAIRS, type PairSplit, splitPairs } from './reward-model-split.js';

export interface RewardModelTrainOptions {
  runId: string;
  tokenizer: Tokenizer;
  out: string;
  size?: string;
  steps?: number;
  lr?: number;
  /** Share of the tasks with pairs held out (at least one task when two or more have pairs). */
  holdout?: number;
  /** Share of the tasks with pairs kept for validation (best step, threshold); at least one task when three or more have pairs. */
  validation?: number;
  /** A policy checkpoint to start from (its layers, a fresh value head); its log-prob is then a second baseline. */
  init?: string;
  /** AdamW weight decay (default 0.1: a reward model memorises a small preference set otherwise). */
  weightDecay?: number;
  /** Fewest training pairs to train on (default MIN_TRAIN_PAIRS); below it the command refuses with the counts. */
  minPairs?: number;
  seed?: number;
  /** Progress: a line per phase and every few steps (the CLI writes them to stderr). */
  onProgress?: (line: string) => void;
}

/** The report's fields are the editor's too (`rewardModel/train`). */
export type { RewardModelReport };

async function accuracy(model: Transformer, pairs: PreferencePair[], padId: number): Promise<number> {
  const s = await pairScores(model, pairs, padId);
  return pairAccuracy(s.chosen, s.rejected);
}

export { FEW_HELDOUT_PAIRS, MIN_TRAIN_PAIRS };

export async function trainRewardModelFromBuffer(
  store: ExperienceStore,
  o: RewardModelTrainOptions,
): Promise<RewardModelReport> {
  await initEngine();
  const split = await splitPairs(store, o);
  const { tasks, held, validation, trainPairs, valPairs, heldPairs, ratings, counts } = split;
  const maxLen = Math.max(
    ...[...trainPairs, ...valPairs, ...heldPairs].flatMap((p) => [
      p.prompt.length + p.chosen.length,
      p.prompt.length + p.rejected.length,
    ]),
    2,
  );
  o.onProgress?.(`${counts}; ${ratings.length} rating(s) to train on`);
  const { model, policy } = startModel(o, maxLen);
  try {
    const r = await fit(model, split, o);
    const { threshold, heldAcc, baselines, judged } = await heldOutFigures(model, policy, split, o);
    await saveCheckpoint(
      model,
      o.out,
      {
        version: 0,
        step: r.bestStep ?? r.stepsRun,
        createdAt: Date.now(),
        rewardModel: { runId: o.runId, threshold, heldout_accuracy: heldAcc },
      },
      o.tokenizer,
    );
    return {
      out: o.out,
      tasks: tasks.length,
      train_pairs: trainPairs.length,
      train_ratings: ratings.length,
      validation_tasks: validation.size,
      validation_pairs: valPairs.length,
      validation_accuracy: r.validationAccuracy ?? null,
      best_step: r.bestStep ?? r.stepsRun,
      heldout_tasks: held.size,
      heldout_pairs: heldPairs.length,
      heldout_accuracy: heldAcc,
      heldout_stderr: heldAcc === null ? null : accuracyStderr(heldAcc, heldPairs.length),
      baselines,
      threshold,
      heldout_judged_accuracy: judged,
      train_accuracy: trainPairs.length ? await accuracy(model, trainPairs, o.tokenizer.padId) : 0,
      final_loss: r.losses.at(-1) ?? 0,
    };
  } finally {
    model.dispose();
    policy?.dispose();
  }
}

/** The model to train: the `--init` policy's layers with a fresh value head (the policy kept as a baseline), or a fresh preset. */
function startModel(o: RewardModelTrainOptions, maxLen: number): { model: Transformer; policy?: Transformer } {
  if (o.init) {
    const { model, policy } = rewardModelFromPolicy(o.init, o.tokenizer, o.seed ?? 0);
    o.onProgress?.(
      `starting from the policy ${o.init} (${model.config.nLayers} layers, d_model ${model.config.dModel}) with a fresh value head`,
    );
    return { model, policy };
  }
  const model = new Transformer(
    presetConfig(o.size ?? 'tiny-0.4m', o.tokenizer.vocabSize, { valueHead: true, maxSeqLen: Math.max(maxLen, 32) }),
    o.seed ?? 0,
  );
  return { model };
}

/** Trains on the training pairs and ratings; the validation pairs pick the step whose weights are kept. */
async function fit(model: Transformer, split: PairSplit, o: RewardModelTrainOptions) {
  const steps = o.steps ?? 200;
  const every = Math.max(1, Math.round(steps / 20));
  const r = await trainRewardModel(
    model,
    { pairs: split.trainPairs, ratings: split.ratings },
    {
      steps,
      lr: o.lr ?? 1e-3,
      weightDecay: o.weightDecay ?? 0.1,
      seed: o.seed ?? 0,
      padId: o.tokenizer.padId,
      validation: split.valPairs,
      onStep: (s, loss) =>
        (s % every === 0 || s === steps) && o.onProgress?.(`step ${s}/${steps} loss ${loss.toFixed(4)}`),
      onValidation: (s, acc, loss) =>
        o.onProgress?.(`validation at step ${s}: pairwise accuracy ${acc.toFixed(3)}, loss ${loss.toFixed(4)}`),
    },
  );
  if (r.bestStep !== undefined)
    o.onProgress?.(`kept the weights of step ${r.bestStep} (validation accuracy ${r.validationAccuracy!.toFixed(3)})`);
  return r;
}

/** The threshold of "judged correct" and the held-out figures: accuracy, its baselines, answers judged correct. */
async function heldOutFigures(
  model: Transformer,
  policy: Transformer | undefined,
  { trainPairs, valPairs, heldPairs }: PairSplit,
  o: RewardModelTrainOptions,
) {
  // The threshold of "judged correct": what separates chosen from rejected answers on the
  // validation pairs (else the training pairs); the held-out pairs never choose anything.
  const fitOn = valPairs.length ? valPairs : trainPairs;
  const fs = await pairScores(model, fitOn, o.tokenizer.padId);
  const threshold = fitThreshold(fs.chosen, fs.rejected);
  o.onProgress?.('scoring the held-out pairs');
  const hs = heldPairs.length ? await pairScores(model, heldPairs, o.tokenizer.padId) : undefined;
  const heldAcc = hs ? pairAccuracy(hs.chosen, hs.rejected) : null;
  const baselines: { name: string; heldout_accuracy: number }[] = [];
  if (heldPairs.length) {
    const len = lengthBaseline(trainPairs, heldPairs);
    baselines.push({ name: `length (${len.prefers} preferred)`, heldout_accuracy: len.accuracy });
    if (policy) {
      const lp = await policyLogprobScores(policy, heldPairs, o.tokenizer.padId);
      baselines.push({
        name: 'policy log-prob (mean per answer token)',
        heldout_accuracy: pairAccuracy(lp.chosen, lp.rejected),
      });
    }
  }
  // Held-out answers judged correct: chosen ones at or above the threshold, rejected ones below.
  const judged = hs
    ? (hs.chosen.filter((x) => x >= threshold).length + hs.rejected.filter((x) => x < threshold).length) /
      (2 * heldPairs.length)
    : null;
  return { threshold, heldAcc, baselines, judged };
}

export const rewardModelTrainCommand = command({
  name: 'reward-model train',
  summary: "train the learned reward model from a run's curated pairs and ratings; reports held-out pairwise accuracy",
  flags: {
    run: { type: 'string', value: 'RUN_DIR|BUFFER', required: true, description: 'the run (its folder) or its buffer' },
    out: { type: 'string', value: 'DIR', required: true, description: 'the folder the reward model is saved to' },
    'run-id': { type: 'string', value: 'ID', description: "the run's id (default: the buffer's only run)" },
    tokenizer: {
      type: 'string',
      value: 'DIR',
      description: "the tokenizer (default: the one beside the buffer, else the run's latest checkpoint's)",
    },
    size: { type: 'string', value: 'PRESET', description: 'the model size preset (default: tiny-0.4m)' },
    init: {
      type: 'string',
      value: 'POLICY_DIR|latest',
      description: "start from a policy checkpoint (latest: the run's newest)",
    },
    steps: { type: 'number', default: 200, description: 'training steps' },
    lr: { type: 'number', value: 'LR', default: 1e-3, description: 'learning rate' },
    'weight-decay': { type: 'number', value: 'WD', default: 0.1, description: 'AdamW weight decay' },
    holdout: { type: 'number', value: 'SHARE', default: 0.2, description: 'share of the tasks held out' },
    validation: {
      type: 'number',
      value: 'SHARE',
      default: 0.15,
      description: 'share of the tasks kept for validation',
    },
    'min-pairs': { type: 'number', default: MIN_TRAIN_PAIRS, description: 'fewest training pairs to train on' },
    seed: { type: 'number', default: 0, description: 'the seed of the split and the weights' },
  },
  async run({ flags }) {
    const { run, out, holdout, validation, 'min-pairs': minPairs, 'weight-decay': weightDecay } = flags;
    const url = resolveBufferUrl(run);
    const store = await openStore(url);
    try {
      // The run id: given, or the one run the buffer holds.
      let runId = flags['run-id'];
      if (!runId) {
        const ids = new Set((await store.scan(0, 1000)).map((r) => r.experience.runId));
        if (ids.size !== 1)
          throw new InputError(
            `--run-id is required: the buffer holds ${ids.size === 0 ? 'no runs' : `runs ${[...ids].join(', ')}`}`,
          );
        runId = [...ids][0]!;
      }
      let tokDir = flags.tokenizer;
      if (!tokDir && schemeOf(url) === 'sqlite' && existsSync(join(dirname(url), 'tokenizer.json')))
        tokDir = dirname(url);
      if (!tokDir) tokDir = (await store.latestCheckpoint(runId))?.path;
      if (!tokDir)
        throw new InputError(`--tokenizer: no tokenizer.json beside the buffer and no checkpoint of run '${runId}'`);
      if (!(holdout >= 0 && holdout < 1)) throw new InputError(`--holdout must be in [0, 1), got ${holdout}`);
      if (!(validation >= 0 && holdout + validation < 1))
        throw new InputError(
          `--validation must be at least 0 and leave tasks to train on with --holdout ${holdout}, got ${validation}`,
        );
      if (!(Number.isInteger(minPairs) && minPairs >= 1))
        throw new InputError(`--min-pairs must be a whole number of at least 1, got ${minPairs}`);
      // --init latest: the run's newest checkpoint (the policy the pairs were sampled from, or later).
      let init = flags.init;
      if (init === 'latest') {
        init = (await store.latestCheckpoint(runId))?.path;
        if (!init) throw new InputError(`--init latest: run '${runId}' has no checkpoint`);
      }
      if (!(weightDecay >= 0)) throw new InputError(`--weight-decay must be at least 0, got ${weightDecay}`);
      const report = await trainRewardModelFromBuffer(store, {
        init,
        weightDecay,
        runId,
        tokenizer: loadTokenizer(tokDir),
        out,
        size: flags.size,
        holdout,
        validation,
        minPairs,
        steps: flags.steps,
        lr: flags.lr,
        seed: flags.seed,
        onProgress: (line) => process.stderr.write(`reward-model: ${line}\n`),
      });
      console.log(JSON.stringify(report));
      return 0;
    } finally {
      await store.close();
    }
  },
});
