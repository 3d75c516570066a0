// Importing Hugging Face model folders: architectures, dtypes, shards, the HF cache layout, the
// model's own tokenizer and chat template, refusals by name, and the HF export round trip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  readdirSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer as HfLib } from '@huggingface/tokenizers';
import { Template } from '@huggingface/jinja';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint, saveCheckpoint } from '../../backend/model/checkpoint.js';
import { scoreIds, scoreIdsOf } from '../../backend/model/score.js';
import { exportHf } from '../../backend/model/export/hf.js';
import { encodePrompt, encodeResponse, stopTokens } from '../../backend/model/chat.js';
import type { HfTokenizer } from '../../backend/model/hf/tokenizer.js';
import { floatToBf16 } from '../../backend/model/safetensors.js';
import { makeHfModel, type HfModelSpec, TINY_QWEN2 } from '../../tools/hf-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-hf-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

const QWEN2 = TINY_QWEN2;
const LLAMA3: HfModelSpec = {
  architecture: 'LlamaForCausalLM',
  tokenizer: 'llama3',
  hidden: 32,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  headDim: 12,
  intermediate: 48,
  tied: false,
  ropeTheta: 500000,
  ropeScaling: {
    rope_type: 'llama3',
    factor: 8,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 64,
  },
};
const TEXT = 'Solve: 12 * 7 = 84. Then héllo wörld, <|im_end|> and more!';

async function score(dir: string, text = TEXT): Promise<{ ids: number[]; lp: number[] }> {
  const ck = loadCheckpoint(dir);
  const ids = scoreIdsOf(ck.tokenizer!, text);
  const lp = await scoreIds(ck.model, ids);
  ck.model.dispose();
  return { ids, lp };
}

test('Qwen2 (q/k/v biases, tied head): ids exactly as @huggingface/tokenizers gives them, chat template by @huggingface/jinja, eos from the files', async () => {
  const dir = makeHfModel(join(root, 'qwen2'), QWEN2);
  const ck = loadCheckpoint(dir);
  assert.equal(ck.model.config.attnBias, true);
  assert.equal(ck.model.config.tieEmbeddings, true);
  assert.equal(ck.model.params.has('model.layers.1.self_attn.k_proj.bias'), true);
  const tok = ck.tokenizer as HfTokenizer;
  assert.equal(tok.kind, 'hf');
  const tj = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
  const tc = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));
  const lib = new HfLib(tj, tc);
  assert.deepEqual(scoreIdsOf(tok, TEXT), lib.encode(TEXT).ids);
  // Qwen's <|im_end|> (151645) ends a turn and is eos; generation_config adds <|endoftext|>.
  assert.equal(tok.endOfTurnId, 151645);
  assert.deepEqual(stopTokens(tok).sort(), [151643, 151645]);
  const msgs = [{ role: 'user' as const, content: 'What is 2+2?' }];
  const rendered = new Template(tc.chat_template).render({
    messages: msgs,
    add_generation_prompt: true,
    bos_token: '',
    eos_token: '<|im_end|>',
  });
  assert.equal(rendered, '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n');
  assert.deepEqual(encodePrompt(tok, msgs), lib.encode(rendered, { add_special_tokens: false }).ids);
  assert.deepEqual(encodeResponse(tok, '4').slice(-1), [151645]);
  ck.model.dispose();
});

test('Llama-3 (rope_scaling llama3, head_dim != hidden/heads, untied): config read and <|eot_id|> ends a turn', async () => {
  const dir = makeHfModel(join(root, 'llama3'), LLAMA3);
  const ck = loadCheckpoint(dir);
  const c = ck.model.config;
  assert.equal(c.headDim, 12);
  assert.equal(c.tieEmbeddings, false);
  assert.deepEqual(c.ropeScaling, {
    type: 'llama3',
    factor: 8,
    lowFreqFactor: 1,
    highFreqFactor: 4,
    originalMaxPositionEmbeddings: 64,
  });
  assert.deepEqual(ck.model.params.get('model.layers.0.self_attn.q_proj.weight')!.shape, [32, 48]);
  assert.equal((ck.tokenizer as HfTokenizer).endOfTurnId, 128009);
  ck.model.dispose();
  // The scaling changes the math: the same weights without it score differently.
  const plain = join(root, 'llama3-noscale');
  makeHfModel(plain, { ...LLAMA3, ropeScaling: undefined });
  const a = await score(dir);
  const b = await score(plain);
  assert.ok(Math.max(...a.lp.map((x, i) => Math.abs(x - b.lp[i]!))) > 1e-2);
});

test('sharded BF16 (Qwen3, q/k norms): every weight is the bf16 rounding of the float32 original', async () => {
  const spec: HfModelSpec = {
    architecture: 'Qwen3ForCausalLM',
    tokenizer: 'qwen3',
    hidden: 32,
    layers: 2,
    heads: 4,
    kvHeads: 2,
    headDim: 16,
    intermediate: 48,
    tied: true,
  };
  const f32 = loadCheckpoint(makeHfModel(join(root, 'qwen3-f32'), spec));
  const dir = makeHfModel(join(root, 'qwen3-bf16'), { ...spec, dtype: 'BF16', shards: 3 });
  assert.equal(readdirSync(dir).filter((f) => /^model-0000\d-of-00003\.safetensors$/.test(f)).length, 3);
  const bf = loadCheckpoint(dir);
  assert.equal(bf.model.config.qkNorm, true);
  const bits = new Float32Array(1);
  const u = new Uint32Array(bits.buffer);
  for (const [name, v] of f32.model.params) {
    const want = v.dataSync() as Float32Array;
    const got = bf.model.params.get(name)!.dataSync() as Float32Array;
    for (let i = 0; i < want.length; i += 7) {
      u[0] = floatToBf16(want[i]!) << 16;
      assert.equal(got[i], bits[0], `${name}[${i}]`);
    }
  }
  f32.model.dispose();
  bf.model.dispose();
});

test('an HF-cache entry (models--org--name) and its snapshot folder load the same model', async () => {
  const src = makeHfModel(join(root, 'cache-src'), QWEN2);
  const entry = join(root, 'hub', 'models--acme--tiny-qwen2');
  const rev = '0123456789abcdef0123456789abcdef01234567';
  mkdirSync(join(entry, 'blobs'), { recursive: true });
  mkdirSync(join(entry, 'snapshots', rev), { recursive: true });
  mkdirSync(join(entry, 'refs'), { recursive: true });
  writeFileSync(join(entry, 'refs', 'main'), rev);
  // As huggingface_hub stores them: content-addressed blobs, snapshot files are relative symlinks.
  for (const [i, f] of readdirSync(src).entries()) {
    renameSync(join(src, f), join(entry, 'blobs', `blob${i}`));
    symlinkSync(join('..', '..', 'blobs', `blob${i}`), join(entry, 'snapshots', rev, f));
  }
  const a = await score(entry);
  const b = await score(join(entry, 'snapshots', rev));
  assert.deepEqual(a, b);
  assert.equal(a.lp.length, a.ids.length - 1);
});

test('unsupported architectures and math-changing config fields are refused by file and field; config.json is checked against the safetensors headers', () => {
  const dir = makeHfModel(join(root, 'refuse'), QWEN2);
  const cfgFile = join(dir, 'config.json');
  const base = readFileSync(cfgFile, 'utf8');
  const expectRefused = (edit: (c: Record<string, unknown>) => void, field: RegExp, msg: RegExp) => {
    const c = JSON.parse(base);
    edit(c);
    writeFileSync(cfgFile, JSON.stringify(c));
    assert.throws(
      () => loadCheckpoint(dir),
      (e: Error) => {
        assert.match(e.message, /config\.json/);
        assert.match(e.message, field);
        assert.match(e.message, msg);
        return true;
      },
    );
  };
  expectRefused(
    (c) => (c.architectures = ['GPT2LMHeadModel']),
    /field 'architectures'/,
    /GPT2LMHeadModel.*not supported/,
  );
  expectRefused((c) => (c.rope_scaling = { rope_type: 'yarn', factor: 4 }), /field 'rope_scaling.rope_type'/, /yarn/);
  expectRefused((c) => (c.use_sliding_window = true), /field 'use_sliding_window'/, /changes the model's math/);
  expectRefused((c) => (c.hidden_act = 'gelu'), /field 'hidden_act'/, /gelu/);
  expectRefused((c) => (c.logit_softcapping = 30), /field 'logit_softcapping'/, /unknown config field/);
  expectRefused((c) => (c.model_type = 'llama'), /field 'model_type'/, /qwen2/);
  // config.json against the safetensors headers: the mismatch names config.json's field, the weights file and the tensor.
  const c = JSON.parse(base);
  c.intermediate_size = 64;
  writeFileSync(cfgFile, JSON.stringify(c));
  assert.throws(
    () => loadCheckpoint(dir),
    /config\.json: field 'intermediate_size': 64, but model\.layers\.0\.mlp\.gate_proj\.weight in .*model\.safetensors has 48 outputs/,
  );
  writeFileSync(cfgFile, base);
  rmSync(join(dir, 'model.safetensors'));
  assert.throws(() => loadCheckpoint(dir), /no model\.safetensors or model\.safetensors\.index\.json/);
});

test('HF export re-imports with identical log-probs, keeping the architecture, config fields and tokenizer files; so does a saved checkpoint', async () => {
  const dir = makeHfModel(join(root, 'rt-src'), { ...QWEN2, dtype: 'BF16' });
  const before = await score(dir);
  const ck = loadCheckpoint(dir);
  const out = join(root, 'rt-hf');
  await exportHf(ck.model, ck.tokenizer, out);
  const cfg = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
  assert.deepEqual(cfg.architectures, ['Qwen2ForCausalLM']);
  assert.equal(cfg.use_sliding_window, false);
  assert.equal(cfg.torch_dtype, 'float32');
  assert.equal(cfg.rft, undefined);
  for (const f of ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json'])
    assert.deepEqual(JSON.parse(readFileSync(join(out, f), 'utf8')), JSON.parse(readFileSync(join(dir, f), 'utf8')), f);
  assert.deepEqual(await score(out), before);
  const saved = join(root, 'rt-ckpt');
  await saveCheckpoint(ck.model, saved, { version: 4, step: 40 }, ck.tokenizer);
  const re = loadCheckpoint(saved);
  assert.equal(re.meta.version, 4);
  assert.equal(re.tokenizer!.kind, 'hf');
  re.model.dispose();
  assert.deepEqual(await score(saved), before);
  ck.model.dispose();
});
