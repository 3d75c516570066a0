// The independent check: HF-layout models with random weights, imported here and exported as GGUF,
// give the same per-token log-probs in llama.cpp (node-llama-cpp, its npm-prebuilt CPU binary) as in
// this project. llama.cpp runs with an F32 KV cache and without flash attention, so both sides
// compute in float32 (its default F16 cache alone moves log-probs by up to ~0.2 on these peaked models).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel, type ControlledEvaluateInputItem, type Llama, type Token } from 'node-llama-cpp';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { scoreIds, scoreIdsOf } from '../../backend/model/score.js';
import { exportGguf, permuteRows } from '../../backend/model/export/gguf.js';
import { makeHfModel, type HfModelSpec } from '../../tools/hf-model.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-llamacpp-'));
let llama: Llama | undefined;
test.after(async () => {
  await llama?.dispose();
  rmSync(root, { recursive: true, force: true });
});
const TEXT =
  'The quick brown fox jumps over the lazy dog. 1234 + 5678 = 6912, said the model, twice over and over again.';
const TOLERANCE = 1e-3;

/** log p(ids[i+1] | ids[..i]) from llama.cpp's full next-token logits at every position. */
async function llamaCppLogprobs(gguf: string, ids: number[], f32Cache = true): Promise<number[]> {
  llama ??= await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: gguf });
  const ctx = await model.createContext({
    contextSize: 256,
    batchSize: 256,
    flashAttention: false,
    ...(f32Cache ? { experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' } : {}),
  });
  try {
    // node-llama-cpp brands token ids (Token); ours are plain vocabulary ids of the same tokenizer.
    const toks = ids as Token[];
    const input: ControlledEvaluateInputItem[] = toks.map((t, i) =>
      i < toks.length - 1 ? [t, { generateNext: { logits: true } }] : t,
    );
    const res = await ctx.getSequence().controlledEvaluate(input);
    const out: number[] = [];
    for (let i = 0; i < ids.length - 1; i++) {
      const logits = res[i]!.next.logits!;
      let max = -Infinity;
      for (const v of logits.values()) if (v > max) max = v;
      let sum = 0;
      for (const v of logits.values()) sum += Math.exp(v - max);
      out.push(logits.get(toks[i + 1]!)! - max - Math.log(sum));
    }
    return out;
  } finally {
    await ctx.dispose();
    await model.dispose();
  }
}

const maxDiff = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));

const CASES: [string, HfModelSpec][] = [
  [
    'Qwen2 (q/k/v biases, tied head)',
    {
      architecture: 'Qwen2ForCausalLM',
      tokenizer: 'qwen3',
      hidden: 64,
      layers: 2,
      heads: 4,
      kvHeads: 2,
      intermediate: 96,
      tied: true,
    },
  ],
  [
    'Llama-3 (rope_scaling llama3, head_dim 24 != 64/4, untied)',
    {
      architecture: 'LlamaForCausalLM',
      tokenizer: 'llama3',
      hidden: 64,
      layers: 2,
      heads: 4,
      kvHeads: 2,
      headDim: 24,
      intermediate: 96,
      tied: false,
      ropeTheta: 500000,
      ropeScaling: {
        rope_type: 'llama3',
        factor: 8,
        low_freq_factor: 1,
        high_freq_factor: 4,
        original_max_position_embeddings: 64,
      },
    },
  ],
  [
    'Qwen3 (q/k norms, head_dim 32), sharded BF16',
    {
      architecture: 'Qwen3ForCausalLM',
      tokenizer: 'qwen3',
      hidden: 64,
      layers: 2,
      heads: 4,
      kvHeads: 2,
      headDim: 32,
      intermediate: 96,
      tied: true,
      dtype: 'BF16',
      shards: 3,
    },
  ],
  [
    'Mistral (GQA 4:1, untied)',
    {
      architecture: 'MistralForCausalLM',
      tokenizer: 'llama3',
      hidden: 64,
      layers: 2,
      heads: 8,
      kvHeads: 2,
      intermediate: 96,
      tied: false,
      extra: { sliding_window: null },
    },
  ],
];

for (const [label, spec] of CASES) {
  test(`${label}: log-probs agree with llama.cpp on the GGUF export within ${TOLERANCE}`, async () => {
    const name = spec.architecture + (spec.shards ?? '');
    const dir = makeHfModel(join(root, name), spec);
    const ck = loadCheckpoint(dir);
    const ids = scoreIdsOf(ck.tokenizer!, TEXT);
    const ours = await scoreIds(ck.model, ids);
    const gguf = join(root, `${name}.gguf`);
    await exportGguf(ck.model, ck.tokenizer!, gguf, { dtype: 'f32' });
    ck.model.dispose();
    const theirs = await llamaCppLogprobs(gguf, ids);
    const d = maxDiff(ours, theirs);
    console.log(
      `# ${label}: ${ids.length - 1} log-probs, max |ours - llama.cpp| = ${d.toExponential(2)}, mean log-prob ${(ours.reduce((a, b) => a + b, 0) / ours.length).toFixed(2)}`,
    );
    assert.ok(d < TOLERANCE, `max difference ${d}`);
    // The models are far from uniform, so agreement is not trivial: the log-probs spread widely.
    assert.ok(Math.max(...ours) - Math.min(...ours) > 5);
  });
}

test('the CLI: `rft model score` prints ids and log-probs; `rft model export --format gguf --dtype f16` loads in llama.cpp', async () => {
  const dir = makeHfModel(join(root, 'cli'), CASES[0]![1]);
  const rft = (...args: string[]) =>
    execFileSync(process.execPath, ['bin/rft.mjs', ...args], {
      encoding: 'utf8',
      env: { ...process.env, RFT_FROM_SOURCE: '1' },
    });
  const last = JSON.parse(rft('model', 'score', dir, '--text', TEXT).trim().split('\n').pop()!) as {
    ids: number[];
    logprobs: number[];
  };
  const ck = loadCheckpoint(dir);
  assert.deepEqual(last.ids, scoreIdsOf(ck.tokenizer!, TEXT));
  assert.equal(last.logprobs.length, last.ids.length - 1);
  const ours = await scoreIds(ck.model, last.ids);
  ck.model.dispose();
  assertF32Close(last.logprobs, ours, ULPS.forward, '`rft model score` (outside the heap) vs in-process');
  const out = join(root, 'cli-gguf');
  const res = JSON.parse(
    rft('model', 'export', dir, '--format', 'gguf', '--dtype', 'f16', '--out', out).trim().split('\n').pop()!,
  ) as { out: string };
  const theirs = await llamaCppLogprobs(res.out, last.ids);
  // F16 weights: close, not exact.
  const d = maxDiff(last.logprobs, theirs);
  console.log(`# f16 GGUF: max |ours(f32) - llama.cpp(f16 weights)| = ${d.toExponential(2)}`);
  assert.ok(d < 0.25, `f16 difference ${d}`);
});

test('permuteRows moves each head from rotate-half to interleaved pairs (convert_hf_to_gguf.py permute)', () => {
  // 2 heads of dim 4, 1 column: head rows [a0 a1 b0 b1] -> [a0 b0 a1 b1].
  const d = new Float32Array([0, 1, 2, 3, 10, 11, 12, 13]);
  assert.deepEqual([...permuteRows(d, 8, 1, 2)], [0, 2, 1, 3, 10, 12, 11, 13]);
});
