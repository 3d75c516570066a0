// Issue 41 item 3: this project's GRPO and the PyTorch reference of `npm run bench -- rl-reference`
// (bench/torch_grpo.py, computed as TRL's GRPOTrainer computes it) give the same group advantages,
// per-token log-probs, loss and gradient on one identical batch: a pretrained model imported from its
// Hugging Face folder, sampled completions, rewards with a spread in every group, behaviour log-probs
// off the current policy (ratios 0.74..1.35, so the 0.2 clip acts on both sides) and a reference model
// of other weights (so the k3 KL term is not zero). The project is configured as TRL's defaults read
// (kl_fn k3, advantage epsilon 1e-4); the loss goes through the trainer's real step (its loss and
// global gradient norm) and the gradient of each weight through the trainer's own pieces. Runs where
// Debian's python3-torch is installed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { initEngine, tf } from '../../backend/model/engine.js';
import type { Experience } from '../../backend/core/types.js';
import { encodePrompt, stopTokens, taskMessages } from '../../backend/model/chat.js';
import { isLinearWeight, loadCheckpoint } from '../../backend/model/checkpoint.js';
import { generate } from '../../backend/model/generate.js';
import { tokenLogprobs } from '../../backend/model/logprobs.js';
import { loadTokenizer } from '../../backend/model/tokenizer/io.js';
import { buildBatch, disposeBatch } from '../../backend/trainer/batch.js';
import { groupAdvantages, makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { lastLetterTasks, makePretrainedModel } from '../../tools/pretrained-model.js';
import { runTorch, torchPython } from '../../bench/torch.js';

await initEngine();
const BETA = 0.04;
const PARAMS = { kl_fn: 'k3', kl_coef: BETA, epsilon: 1e-4 };
// This project's weight name -> the reference model's (bench/torch_hf.py).
const COMPARED: Record<string, string> = {
  'model.embed_tokens.weight': 'emb.weight',
  'model.layers.0.self_attn.q_proj.weight': 'blocks.0.q.weight',
  'model.layers.0.self_attn.v_proj.weight': 'blocks.0.v.weight',
  'model.layers.1.mlp.down_proj.weight': 'blocks.1.dn.weight',
  'model.layers.1.input_layernorm.weight': 'blocks.1.n1.w',
  'model.norm.weight': 'norm.w',
};

interface TorchBatch {
  loss: number;
  logp: number[][];
  grads: Record<string, number[]>;
  grad_norm: number;
}

const relErr = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let d = 0;
  let n = 0;
  for (let i = 0; i < a.length; i++) {
    d += (a[i]! - b[i]!) ** 2;
    n += b[i]! ** 2;
  }
  return Math.sqrt(d / Math.max(n, 1e-30));
};

test('one identical GRPO batch: the same advantages, log-probs, loss and gradient as the PyTorch reference (TRL computation)', async (t) => {
  if (!torchPython()) return t.skip('python3-torch not installed');
  const root = mkdtempSync(join(tmpdir(), 'rft-torch-grpo-parity-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const actorDir = (await makePretrainedModel(join(root, 'actor'), { steps: 80 })).dir;
  const refDir = (await makePretrainedModel(join(root, 'ref'), { steps: 30, seed: 9 })).dir;
  const tok = loadTokenizer(actorDir);
  const actor = loadCheckpoint(actorDir).model;
  const reference = loadCheckpoint(refDir).model;

  // 3 prompts x 4 sampled completions; rewards with a spread in every group.
  const tasks = lastLetterTasks().train.slice(0, 3);
  const prompts = tasks.flatMap((x) => Array.from({ length: 4 }, () => encodePrompt(tok, taskMessages(x.prompt))));
  const gens = await generate(actor, tok, prompts, {
    maxNewTokens: 3,
    temperature: 1,
    stopTokens: stopTokens(tok),
    seed: 3,
  });
  const rewards = [1, 0, 0, 1, 0, 1, 0, 0, 1, 1, 1, 0];
  const exps: Experience[] = gens.map((g, i) => ({
    id: `e${i}`,
    taskId: tasks[Math.floor(i / 4)]!.id,
    groupId: `g${Math.floor(i / 4)}`,
    runId: 'parity',
    source: 'usual',
    promptTokens: prompts[i]!,
    promptText: '',
    responseTokens: g.tokens,
    responseText: g.text,
    actionMask: g.tokens.map(() => 1),
    // Behaviour log-probs off the current policy by -0.3..0.3: ratios on both sides of the clip.
    logprobs: g.logprobs.map((lp, j) => lp + 0.3 * Math.sin(1.7 * i + 2.3 * j + 0.5)),
    modelVersion: 0,
    reward: rewards[i]!,
    status: 'ok',
    useCount: 0,
    createdAt: 0,
  }));
  groupAdvantages('grpo', exps, PARAMS);

  const file = join(root, 'batch.json');
  writeFileSync(
    file,
    JSON.stringify({
      mode: 'batch',
      model: actorDir,
      ref_model: refDir,
      rows: exps.map((e) => ({ prompt: e.promptTokens, response: e.responseTokens, reward: e.reward })),
      group_size: 4,
      adv_eps: 1e-4,
      old: exps.map((e) => e.logprobs),
      beta: BETA,
      clip_eps: 0.2,
      grads: Object.values(COMPARED),
    }),
  );
  const r = runTorch<TorchBatch & { advantages: number[] }>(
    fileURLToPath(new URL('../../bench/torch_grpo.py', import.meta.url)),
    { file },
  );
  assert.ok(r.result, r.why);
  const ref = r.result;

  // Group advantages: (r - mean) / (std + 1e-4), the sample std, per group.
  assert.ok(
    relErr(
      exps.map((e) => e.advantages![0]!),
      ref.advantages,
    ) < 1e-5,
    `advantages ${exps.map((e) => e.advantages![0]).join(',')} vs ${ref.advantages.join(',')}`,
  );
  // Per-token log-probs of the imported weights: the two model codes read the folder alike.
  const trainer = new Trainer(
    actor,
    makeObjective('grpo', PARAMS),
    { lr: 1e-3, padId: tok.padId, microBatchSize: 0 },
    reference,
  );
  const ours = await trainer.responseLogprobs(exps);
  assert.ok(relErr(ours.flat(), ref.logp.flat()) < 1e-4, `log-probs ${ours.flat()} vs ${ref.logp.flat()}`);

  // The gradient of each compared weight, from the trainer's own pieces.
  const batch = buildBatch(exps, tok.padId);
  const refLogprob = tf.tidy(
    () => tokenLogprobs(reference, batch.ids, { attentionMask: batch.attentionMask }).logprobs,
  );
  const objective = makeObjective('grpo', PARAMS);
  const { value, grads } = tf.variableGrads(() => {
    const lp = tokenLogprobs(actor, batch.ids, { attentionMask: batch.attentionMask, train: true }).logprobs;
    return objective.loss({
      logprob: lp,
      oldLogprob: batch.oldLogprob,
      refLogprob,
      advantages: batch.advantages,
      actionMask: batch.actionMask,
      expertMask: batch.expertMask,
      step: 0,
    }).loss;
  }, actor.variables());
  const loss = (await value.data())[0]!;
  assert.ok(Math.abs(loss - ref.loss) < 1e-4 * Math.max(1, Math.abs(ref.loss)), `loss ${loss} vs ${ref.loss}`);
  for (const [ourName, theirName] of Object.entries(COMPARED)) {
    const v = actor.params.get(ourName)!;
    const g = grads[v.name]!;
    const hf = isLinearWeight(ourName) ? tf.transpose(g) : g;
    const err = relErr(await hf.data(), ref.grads[theirName]!);
    t.diagnostic(`${ourName}: relative gradient difference ${err.toExponential(2)}`);
    assert.ok(err < 2e-3, `${ourName}: gradient differs by ${err} (relative)`);
  }
  tf.dispose([value, refLogprob, ...Object.values(grads)]);
  disposeBatch(batch);

  // And the trainer's real step reports the same loss and global gradient norm (before its clip).
  const m = await trainer.trainStep(exps, 0);
  t.diagnostic(`loss ${m.loss} vs ${ref.loss}; grad norm ${m.grad_norm} vs ${ref.grad_norm}`);
  assert.ok(Math.abs(m.loss - ref.loss) < 1e-4 * Math.max(1, Math.abs(ref.loss)), `step loss ${m.loss} vs ${ref.loss}`);
  assert.ok(
    Math.abs(m.grad_norm - ref.grad_norm) < 2e-3 * ref.grad_norm,
    `grad norm ${m.grad_norm} vs ${ref.grad_norm}`,
  );
  trainer.dispose();
  actor.dispose();
  reference.dispose();
});
