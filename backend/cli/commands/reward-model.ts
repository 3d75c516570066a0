// `rft reward-model train`: the learned reward model from what people curated in the editor: the
// run's preference pairs (curation, rating, long2short: backend/buffer/pairs.ts) and its ratings.
// Whole tasks are held out (no rating or pair of a held-out task is trained on) and the held-out
// pairwise accuracy (score(chosen) > score(rejected)) is reported; the model is saved as a
// checkpoint usable as `reward: reward_model:<out>`.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { command, flagNumber, flagString } from '../command.js';
import { initEngine } from '../../model/engine.js';
import { presetConfig } from '../../model/config.js';
import { Transformer } from '../../model/transformer.js';
import { saveCheckpoint } from '../../model/checkpoint.js';
import { loadTokenizer, type Tokenizer } from '../../model/tokenizer/index.js';
import { openStore, resolveBufferUrl, schemeOf, type ExperienceStore } from '../../buffer/storage/index.js';
import { syncPairs } from '../../buffer/pairs.js';
import { Rng } from '../../core/rng.js';
import type { Experience } from '../../core/types.js';
import type { RewardModelReport } from '../../core/protocol.js';
import { preferenceData, type PreferencePair } from '../../explorer/reward-model/data.js';
import { trainRewardModel } from '../../explorer/reward-model/train.js';
import { scoreSequences } from '../../explorer/reward-model/score.js';

export interface RewardModelTrainOptions {
  runId: string;
  tokenizer: Tokenizer;
  out: string;
  size?: string;
  steps?: number;
  lr?: number;
  /** Share of the tasks with pairs held out (at least one task when two or more have pairs). */
  holdout?: number;
  seed?: number;
  /** Progress: a line per phase and every few steps (the CLI writes them to stderr). */
  onProgress?: (line: string) => void;
}

/** The report's fields are the editor's too (`rewardModel/train`). */
export type { RewardModelReport };

async function runExperiences(store: ExperienceStore, runId: string): Promise<Experience[]> {
  const out: Experience[] = [];
  for (let after = 0; ; ) {
    const page = await store.scan(after, 1000, runId);
    for (const r of page) out.push(r.experience);
    if (page.length < 1000) return out;
    after = page[page.length - 1]!.seq;
  }
}

async function accuracy(model: Transformer, pairs: PreferencePair[], padId: number): Promise<number> {
  const c = await scoreSequences(model, pairs.map((p) => [...p.prompt, ...p.chosen]), padId);
  const r = await scoreSequences(model, pairs.map((p) => [...p.prompt, ...p.rejected]), padId);
  return c.filter((s, i) => s > r[i]!).length / pairs.length;
}

export async function trainRewardModelFromBuffer(store: ExperienceStore, o: RewardModelTrainOptions): Promise<RewardModelReport> {
  await initEngine();
  await syncPairs(store, o.runId);
  const exps = (await runExperiences(store, o.runId)).filter((e) => e.split !== 'eval');
  const byId = new Map(exps.map((e) => [e.id, e]));
  const stored = await store.listPairs({ runId: o.runId });
  if (stored.length === 0) throw new Error(`run '${o.runId}': no preference pairs (promote and reject, or rate two responses of one task, in the editor)`);
  const tasks = [...new Set(stored.map((p) => p.taskId))].sort();
  const rng = new Rng(o.seed ?? 0);
  const order = [...tasks];
  for (let i = order.length - 1; i > 0; i--) {
    const j = rng.int(0, i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const nHeld = tasks.length < 2 ? 0 : Math.max(1, Math.round((o.holdout ?? 0.2) * tasks.length));
  const held = new Set(order.slice(0, nHeld));
  const toTokens = (ids: string[]) => {
    const [c, r] = ids.map((id) => byId.get(id)!);
    return { prompt: c!.promptTokens, chosen: c!.responseTokens, rejected: r!.responseTokens };
  };
  const usable = stored.filter((p) => byId.has(p.chosenId) && byId.has(p.rejectedId));
  const trainPairs = usable.filter((p) => !held.has(p.taskId)).map((p) => toTokens([p.chosenId, p.rejectedId]));
  const heldPairs = usable.filter((p) => held.has(p.taskId)).map((p) => toTokens([p.chosenId, p.rejectedId]));
  const ratings = preferenceData(exps.filter((e) => !held.has(e.taskId))).ratings;
  const maxLen = Math.max(...[...trainPairs, ...heldPairs].flatMap((p) => [p.prompt.length + p.chosen.length, p.prompt.length + p.rejected.length]), 2);
  o.onProgress?.(`${trainPairs.length} pair(s) and ${ratings.length} rating(s) of ${tasks.length - held.size} task(s) to train on, ${heldPairs.length} pair(s) of ${held.size} task(s) held out`);
  const cfg = presetConfig(o.size ?? 'tiny-0.4m', o.tokenizer.vocabSize, { valueHead: true, maxSeqLen: Math.max(maxLen, 32) });
  const model = new Transformer(cfg, o.seed ?? 0);
  try {
    const steps = o.steps ?? 200;
    const every = Math.max(1, Math.round(steps / 20));
    const r = await trainRewardModel(model, { pairs: trainPairs, ratings }, {
      steps, lr: o.lr ?? 1e-3, seed: o.seed ?? 0, padId: o.tokenizer.padId,
      onStep: (s, loss) => (s % every === 0 || s === steps) && o.onProgress?.(`step ${s}/${steps} loss ${loss.toFixed(4)}`),
    });
    o.onProgress?.('scoring the held-out pairs');
    await saveCheckpoint(model, o.out, { version: 0, step: o.steps ?? 200, createdAt: Date.now(), rewardModel: { runId: o.runId } }, o.tokenizer);
    return {
      out: o.out,
      tasks: tasks.length,
      train_pairs: trainPairs.length,
      train_ratings: ratings.length,
      heldout_tasks: held.size,
      heldout_pairs: heldPairs.length,
      heldout_accuracy: heldPairs.length ? await accuracy(model, heldPairs, o.tokenizer.padId) : null,
      train_accuracy: trainPairs.length ? await accuracy(model, trainPairs, o.tokenizer.padId) : 0,
      final_loss: r.losses.at(-1) ?? 0,
    };
  } finally {
    model.dispose();
  }
}

const USAGE = 'rft reward-model train --run RUN_DIR|BUFFER --out DIR [--run-id ID] [--tokenizer DIR] [--size tiny-0.4m] [--steps 200] [--lr 1e-3] [--holdout 0.2] [--seed 0]';
command({
  name: 'reward-model train',
  flags: ['run', 'out', 'run-id', 'tokenizer', 'size', 'steps', 'lr', 'holdout', 'seed'],
  usage: 'reward-model train --run RUN_DIR --out DIR',
  summary: "train the learned reward model from a run's curated pairs and ratings; reports held-out pairwise accuracy",
  async run(args) {
    const run = flagString(args, 'run');
    const out = flagString(args, 'out');
    if (!run || !out) throw new Error(`--run and --out are required\nusage: ${USAGE}`);
    const url = resolveBufferUrl(run);
    const store = await openStore(url);
    try {
      // The run id: given, or the one run the buffer holds.
      let runId = flagString(args, 'run-id');
      if (!runId) {
        const ids = new Set((await store.scan(0, 1000)).map((r) => r.experience.runId));
        if (ids.size !== 1) throw new Error(`--run-id is required: the buffer holds ${ids.size === 0 ? 'no runs' : `runs ${[...ids].join(', ')}`}`);
        runId = [...ids][0]!;
      }
      let tokDir = flagString(args, 'tokenizer');
      if (!tokDir && schemeOf(url) === 'sqlite' && existsSync(join(dirname(url), 'tokenizer.json'))) tokDir = dirname(url);
      if (!tokDir) tokDir = (await store.latestCheckpoint(runId))?.path;
      if (!tokDir) throw new Error(`--tokenizer: no tokenizer.json beside the buffer and no checkpoint of run '${runId}'`);
      const holdout = flagNumber(args, 'holdout', 0.2);
      if (!(holdout >= 0 && holdout < 1)) throw new Error(`--holdout must be in [0, 1), got ${holdout}`);
      const report = await trainRewardModelFromBuffer(store, {
        runId, tokenizer: loadTokenizer(tokDir), out, size: flagString(args, 'size'), holdout,
        steps: flagNumber(args, 'steps', 200), lr: flagNumber(args, 'lr', 1e-3), seed: flagNumber(args, 'seed', 0),
        onProgress: (line) => process.stderr.write(`reward-model: ${line}\n`),
      });
      console.log(JSON.stringify(report));
      return 0;
    } finally {
      await store.close();
    }
  },
});
