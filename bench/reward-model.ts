// `npm run bench -- reward-model [--tasks 52] [--steps 300]`: held-out pairwise accuracy of the
// learned reward model on tasks where the preference is learnable from the pairs ("repeat 384":
// the right echo over another three-digit number, so length says nothing), before (issue 25: no
// validation split, the last step kept, no weight decay) and after (the best validation step, weight
// decay 0.1), against the length baseline on the same held-out pairs; and on two-digit sums ("what
// is 49+16?": right over a sum off by 1-9), where a model trained from scratch has nothing to read
// the answer's correctness from (the case --init POLICY_DIR is for). One JSON line per figure.
import { initEngine } from '../backend/model/engine.js';
import { presetConfig } from '../backend/model/config.js';
import { Transformer } from '../backend/model/transformer.js';
import { CharTokenizer } from '../backend/model/tokenizer/index.js';
import { encodePrompt, encodeResponse, taskMessages } from '../backend/model/chat.js';
import { Rng } from '../backend/core/rng.js';
import { trainRewardModel } from '../backend/explorer/reward-model/train.js';
import { pairScores } from '../backend/explorer/reward-model/pair-scores.js';
import { accuracyStderr, lengthBaseline, pairAccuracy } from '../backend/explorer/reward-model/pair-metrics.js';
import type { PreferencePair, Rated } from '../backend/explorer/reward-model/data.js';

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
await initEngine();
const tok = CharTokenizer.train(['repeat what is 0123456789+?']);
interface T {
  prompt: string;
  right: string;
  wrongs: string[];
}
const rng = new Rng(11);
const echo = (): T => {
  const d = String(rng.int(100, 1000));
  const w = () => {
    let x: string;
    do x = String(rng.int(100, 1000));
    while (x === d);
    return x;
  };
  return { prompt: `repeat ${d}`, right: d, wrongs: [w(), w(), w()] };
};
const sum = (): T => {
  const [a, b] = [rng.int(10, 50), rng.int(10, 50)];
  const w = () => {
    let x: number;
    do x = a + b + rng.int(-9, 10);
    while (x === a + b);
    return String(x);
  };
  return { prompt: `what is ${a}+${b}?`, right: String(a + b), wrongs: [w(), w(), w()] };
};
const pairs = (ts: T[]): PreferencePair[] =>
  ts.flatMap((t) =>
    t.wrongs.map((w) => ({
      prompt: encodePrompt(tok, taskMessages(t.prompt)),
      chosen: encodeResponse(tok, t.right),
      rejected: encodeResponse(tok, w),
    })),
  );
const ratings = (ts: T[]): Rated[] =>
  ts.flatMap((t) =>
    [t.right, ...t.wrongs].map((r, i) => ({
      prompt: encodePrompt(tok, taskMessages(t.prompt)),
      response: encodeResponse(tok, r),
      rating: i === 0 ? 5 : 1,
    })),
  );
const steps = arg('steps', 300);
const nTrain = arg('tasks', 52);

for (const [task, make] of [
  ['echo', echo],
  ['sum', sum],
] as const) {
  const [tr, va, he] = [
    Array.from({ length: nTrain }, make),
    Array.from({ length: 12 }, make),
    Array.from({ length: 100 }, make),
  ];
  const heldPairs = pairs(he);
  const len = lengthBaseline(pairs(tr), heldPairs);
  for (const variant of task === 'echo' ? ['before', 'after'] : ['after']) {
    const model = new Transformer(presetConfig('tiny-0.4m', tok.vocabSize, { valueHead: true, maxSeqLen: 32 }), 0);
    const after = variant === 'after';
    const r = await trainRewardModel(
      model,
      { pairs: pairs(tr), ratings: ratings(tr) },
      {
        steps,
        lr: 1e-3,
        padId: tok.padId,
        seed: 0,
        weightDecay: after ? 0.1 : 0,
        ...(after ? { validation: pairs(va) } : {}),
      },
    );
    const s = await pairScores(model, heldPairs, tok.padId);
    const acc = pairAccuracy(s.chosen, s.rejected);
    const t = await pairScores(model, pairs(tr), tok.padId);
    console.log(
      JSON.stringify({
        bench: 'reward-model',
        figure: `${task} held-out pairwise accuracy (${variant})`,
        unit: 'share',
        value: acc,
        stderr: accuracyStderr(acc, heldPairs.length),
        train_accuracy: pairAccuracy(t.chosen, t.rejected),
        baseline: `length (${len.prefers} preferred)`,
        baseline_value: len.accuracy,
        train_pairs: tr.length * 3,
        heldout_pairs: heldPairs.length,
        kept_step: r.bestStep ?? steps,
      }),
    );
    model.dispose();
  }
}
