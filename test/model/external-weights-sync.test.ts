// Weight sync for rollouts from a LoRA model whose frozen base is outside the wasm heap: the worker
// pool receives every weight (adapters merged, weightNames() covering both kinds) and its plain
// in-heap models sample what the trainer-side model samples in process.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { tf, initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { generate } from '../../backend/model/generate.js';
import { makeLoraConfig } from '../../backend/model/lora.js';
import { externalWeightsAvailable } from '../../backend/model/external-weights.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { stopTokens } from '../../backend/model/chat.js';
import { WorkerRolloutModel } from '../../backend/explorer/workers/pool.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';

await initEngine();
const skip = externalWeightsAvailable()
  ? false
  : 'frozen weights outside the heap need the wasm backend with vendor/rft-blas.node (sgemmExt)';
const tok = CharTokenizer.train(['abcdefghij rev 0123456789']);
const cfg = makeConfig({
  vocabSize: tok.vocabSize,
  dModel: 16,
  nLayers: 2,
  nHeads: 2,
  nKvHeads: 1,
  dFF: 32,
  maxSeqLen: 48,
  tieEmbeddings: false,
});
let pool: WorkerRolloutModel | undefined;
after(async () => pool?.close());

test(
  'rollout workers synced from a LoRA model outside the heap sample what it samples in process',
  { skip },
  async () => {
    const model = new Transformer(cfg, 3, { external: true }).addLora(makeLoraConfig({ rank: 2, alpha: 8 }), 4);
    for (const [n, v] of model.adapters)
      if (n.includes('lora_B')) v.assign(tf.randomNormal(v.shape, 0, 0.8, 'float32', 6));
    const plain = new Transformer(cfg, 3);
    const prompts = ['rev abc', 'rev ba', 'rev cab', 'rev a'].map((p) => [tok.bosId, ...tok.encode(p)]);
    const greedy = { maxNewTokens: 8, temperature: 0, stopTokens: stopTokens(tok) };
    const want = await generate(model, tok, prompts, greedy);
    // The adapters matter: the base alone samples something else.
    const baseOnly = await generate(plain, tok, prompts, greedy);
    assert.notDeepEqual(
      baseOnly.map((g) => g.tokens),
      want.map((g) => g.tokens),
    );

    pool = new WorkerRolloutModel({ workers: 2, config: cfg, tokenizer: tok, repeat: null });
    await pool.setWeights(model, 1);
    const got = await pool.generate(prompts, greedy);
    assert.deepEqual(
      got.map((g) => g.tokens),
      want.map((g) => g.tokens),
    );
    got.forEach((g, i) => assertF32Close(g.logprobs, want[i]!.logprobs, ULPS.twoPasses, `sample ${i}`));
    model.dispose();
    plain.dispose();
  },
);
