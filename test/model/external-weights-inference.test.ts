// Inference with the weights outside the wasm heap (backend/model/external-weights.ts): the native
// decode step reads them where they lie (native/rft_blas.c Decode's external slots) and samples what
// the in-heap model samples; `rft model score` and `rft model generate` load a model folder outside
// the heap (the log says so) and print what they print with RFT_EXTERNAL_WEIGHTS=0 (in the heap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { generate } from '../../backend/model/generate.js';
import { nativeAddon } from '../../backend/model/native-blas.js';
import { nativeDecodeAvailable } from '../../backend/model/native-decode.js';
import { externalWeightsAvailable } from '../../backend/model/external-weights.js';
import { makeHfModel, type HfModelSpec } from '../../tools/hf-model.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';

await initEngine();
const skip =
  externalWeightsAvailable() && nativeAddon()?.decodeExternal === true
    ? false
    : 'needs the wasm backend with vendor/rft-blas.node (sgemmExt, decode with external weights)';
const root = mkdtempSync(join(tmpdir(), 'rft-extw-inf-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

const UNTIED: HfModelSpec = {
  architecture: 'LlamaForCausalLM',
  tokenizer: 'llama3',
  hidden: 32,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  headDim: 12,
  intermediate: 48,
  tied: false,
  seed: 3,
};
const TIED: HfModelSpec = {
  architecture: 'LlamaForCausalLM',
  tokenizer: 'qwen3',
  hidden: 32,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  intermediate: 48,
  tied: true,
  seed: 4,
};

test(
  'native decode reads the weights outside the heap: the same samples and log-probs as in the heap and as the tfjs decode (1, 2, 3 rows; tied and untied head)',
  { skip },
  async () => {
    const addon = nativeAddon()!;
    const decode = addon.decode!;
    let externalCalls = 0;
    // Count the steps that passed weights outside the heap (the 8th argument).
    addon.decode = (...args: Parameters<typeof decode>) => {
      if (args[7]?.some((w) => w instanceof Float32Array)) externalCalls++;
      return decode(...args);
    };
    try {
      for (const [label, spec] of [
        ['untied head', UNTIED],
        ['tied head', TIED],
      ] as const) {
        const dir = makeHfModel(join(root, `decode-${spec.tokenizer}`), spec);
        const inHeap = loadCheckpoint(dir);
        const outside = loadCheckpoint(dir, { external: true });
        const tok = inHeap.tokenizer!;
        assert.ok(
          outside.model.external.size > 0 && nativeDecodeAvailable(outside.model),
          'decodes natively outside the heap',
        );
        for (const prompts of [['Hello there'], ['abc', 'The quick brown'], ['1 + 1 =', 'x', 'Reverse: abc']]) {
          const ids = prompts.map((p) => tok.encode(p));
          // Greedy: with a vocabulary of 128k near-uniform tokens a sampled draw can flip on a 1e-6 difference.
          const opts = { maxNewTokens: 12, temperature: 0, seed: 5, stopTokens: [] };
          const before = externalCalls;
          const want = await generate(inHeap.model, tok, ids, opts);
          assert.equal(externalCalls, before, 'the in-heap model passes no outside weights');
          const got = await generate(outside.model, tok, ids, opts);
          // One call prefills the (short) prompt natively, then one per decode step after the first token.
          assert.equal(
            externalCalls - before,
            opts.maxNewTokens,
            'the prefill and every decode step ran natively on the outside weights',
          );
          process.env.RFT_NATIVE_DECODE = '0';
          const tfjs = await generate(outside.model, tok, ids, opts).finally(
            () => delete process.env.RFT_NATIVE_DECODE,
          );
          for (let i = 0; i < ids.length; i++) {
            const what = `${label}, ${ids.length} rows, row ${i}`;
            assert.equal(want[i]!.tokens.length, opts.maxNewTokens);
            assert.deepEqual(got[i]!.tokens, want[i]!.tokens, what);
            assert.deepEqual(tfjs[i]!.tokens, want[i]!.tokens, `${what} (tfjs decode)`);
            assertF32Close(got[i]!.logprobs, want[i]!.logprobs, ULPS.twoPasses, `${what}: log-probs`);
            assertF32Close(
              got[i]!.logprobs,
              tfjs[i]!.logprobs,
              ULPS.twoPasses,
              `${what}: log-probs against the tfjs decode`,
              tok.vocabSize,
            );
          }
        }
        inHeap.model.dispose();
        outside.model.dispose();
      }
    } finally {
      addon.decode = decode;
    }
  },
);

function rft(args: string[], env: Record<string, string> = {}): { last: Record<string, unknown>; stderr: string } {
  const r = spawnSync(process.execPath, ['bin/rft.mjs', ...args], {
    encoding: 'utf8',
    env: { ...process.env, RFT_FROM_SOURCE: '1', RFT_LOG_LEVEL: 'info', ...env },
  });
  assert.equal(r.status, 0, `rft ${args.join(' ')}: ${r.stderr}`);
  return { last: JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>, stderr: r.stderr };
}

test(
  '`rft model score` and `rft model generate` load the folder outside the heap: the same ids, log-probs (1e-5) and greedy reply as in the heap',
  { skip },
  () => {
    const dir = makeHfModel(join(root, 'cli'), UNTIED);
    const TEXT = 'Reverse: abc -> cba. The quick brown fox.';
    const outScore = rft(['model', 'score', dir, '--text', TEXT]);
    const inScore = rft(['model', 'score', dir, '--text', TEXT], { RFT_EXTERNAL_WEIGHTS: '0' });
    assert.match(outScore.stderr, /MiB of weights outside the wasm heap/);
    assert.doesNotMatch(inScore.stderr, /outside the wasm heap/);
    const ids = outScore.last.ids as number[];
    assert.ok(ids.length > 5);
    assert.deepEqual(ids, inScore.last.ids);
    const d = assertF32Close(
      outScore.last.logprobs as number[],
      inScore.last.logprobs as number[],
      ULPS.forward,
      'rft model score outside vs in the heap',
    );
    console.log(`# rft model score: max |outside - in heap| = ${d.toExponential(2)} over ${ids.length - 1} log-probs`);

    const args = ['model', 'generate', dir, '--prompt', 'Say something', '--max-new-tokens', '10'];
    const outGen = rft(args);
    const inGen = rft(args, { RFT_EXTERNAL_WEIGHTS: '0' });
    assert.match(outGen.stderr, /MiB of weights outside the wasm heap/);
    assert.doesNotMatch(inGen.stderr, /outside the wasm heap/);
    assert.ok((outGen.last.tokens as number[]).length > 1, JSON.stringify(outGen.last));
    assert.deepEqual(outGen.last, inGen.last);
  },
);
