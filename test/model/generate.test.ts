import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine, tf } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { generate } from '../../backend/model/generate.js';
import { tokenLogprobs } from '../../backend/model/logprobs.js';
import { ByteTestTokenizer } from '../helpers/byte-tokenizer.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';

await initEngine();
const tok = new ByteTestTokenizer();
const cfg = makeConfig({
  vocabSize: tok.vocabSize,
  dModel: 32,
  nLayers: 2,
  nHeads: 4,
  nKvHeads: 2,
  dFF: 64,
  maxSeqLen: 96,
});

test('seeded sampling is reproducible and different seeds differ', async () => {
  const m = new Transformer(cfg, 21);
  const prompts = [
    [tok.bosId, ...tok.encode('2+2=')],
    [tok.bosId, ...tok.encode('hello')],
  ];
  const a = await generate(m, tok, prompts, { maxNewTokens: 12, seed: 7, stopTokens: [] });
  const b = await generate(m, tok, prompts, { maxNewTokens: 12, seed: 7, stopTokens: [] });
  const c = await generate(m, tok, prompts, { maxNewTokens: 12, seed: 8, stopTokens: [] });
  assert.deepEqual(
    a.map((g) => g.tokens),
    b.map((g) => g.tokens),
  );
  assert.notDeepEqual(
    a.map((g) => g.tokens),
    c.map((g) => g.tokens),
  );
  for (const g of a) {
    assert.equal(g.tokens.length, 12);
    assert.equal(g.logprobs.length, 12);
    assert.equal(g.finishReason, 'length');
  }
  m.dispose();
});

test('behaviour log-probs equal the log-probs recomputed on the full sequence (1e-4)', async () => {
  const m = new Transformer(cfg, 22);
  const prompts = [
    [tok.bosId, ...tok.encode('abc')],
    [tok.bosId, ...tok.encode('a longer prompt')],
  ];
  const gens = await generate(m, tok, prompts, { maxNewTokens: 10, seed: 3, temperature: 1, stopTokens: [] });
  for (let i = 0; i < prompts.length; i++) {
    const seq = [...prompts[i]!, ...gens[i]!.tokens];
    const lp = tf.tidy(() => tokenLogprobs(m, tf.tensor2d([seq], [1, seq.length], 'int32')).logprobs);
    const all = Array.from((await lp.data()) as Float32Array);
    lp.dispose();
    const resp = all.slice(prompts[i]!.length - 1);
    // The KV-cache decode and the full pass multiply in different shapes (sgemv rows vs sgemm): round-off only.
    assertF32Close(gens[i]!.logprobs, resp, ULPS.twoPasses, `row ${i}: behaviour vs recomputed`, tok.vocabSize);
  }
  m.dispose();
});

test('greedy decoding, stop tokens and stop strings', async () => {
  const m = new Transformer(cfg, 23);
  const prompt = [[tok.bosId, ...tok.encode('x')]];
  const g1 = await generate(m, tok, prompt, { maxNewTokens: 8, temperature: 0, stopTokens: [] });
  const g2 = await generate(m, tok, prompt, { maxNewTokens: 8, temperature: 0, seed: 99, stopTokens: [] });
  assert.deepEqual(g1[0]!.tokens, g2[0]!.tokens, 'greedy ignores the seed');
  // Stop at the greedy path's third token: the sample ends there, the stop token included.
  const stop = g1[0]!.tokens[2]!;
  const firstAt = g1[0]!.tokens.indexOf(stop);
  const g3 = await generate(m, tok, prompt, { maxNewTokens: 8, temperature: 0, stopTokens: [stop] });
  assert.equal(g3[0]!.finishReason, 'stop');
  assert.deepEqual(g3[0]!.tokens, g1[0]!.tokens.slice(0, firstAt + 1));
  const text = g1[0]!.text;
  if (text.length >= 3) {
    const g4 = await generate(m, tok, prompt, {
      maxNewTokens: 8,
      temperature: 0,
      stopTokens: [],
      stopStrings: [text.slice(1, 3)],
    });
    assert.equal(g4[0]!.finishReason, 'stop');
    assert.ok(g4[0]!.text.includes(text.slice(1, 3)));
  }
  m.dispose();
});

test('top-k 1 equals greedy; the prompt must fit the context', async () => {
  const m = new Transformer(cfg, 24);
  const prompt = [[tok.bosId, ...tok.encode('q')]];
  const greedy = await generate(m, tok, prompt, { maxNewTokens: 6, temperature: 0, stopTokens: [] });
  const k1 = await generate(m, tok, prompt, { maxNewTokens: 6, temperature: 1, topK: 1, seed: 5, stopTokens: [] });
  assert.deepEqual(k1[0]!.tokens, greedy[0]!.tokens);
  await assert.rejects(
    generate(m, tok, [new Array(96).fill(5)], { maxNewTokens: 4 }),
    /leaves no room to answer in the model.s context of 96 positions/,
  );
  m.dispose();
});
