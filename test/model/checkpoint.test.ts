import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine, tf } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { loadCheckpoint, saveCheckpoint } from '../../backend/model/checkpoint.js';
import { readSafetensors, writeSafetensors } from '../../backend/model/safetensors.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';

await initEngine();
const cfg = makeConfig({
  vocabSize: 300,
  dModel: 16,
  nLayers: 2,
  nHeads: 2,
  nKvHeads: 1,
  dFF: 24,
  maxSeqLen: 32,
  valueHead: true,
});
const ids = () => tf.tensor2d([[1, 4, 9, 2, 7]], [1, 5], 'int32');

async function logitsOf(m: Transformer): Promise<Float32Array> {
  const t = tf.tidy(() => m.forward(ids()).logits);
  const d = (await t.data()) as Float32Array;
  t.dispose();
  return d;
}

test('save -> load gives identical logits, HF names and layout', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-ckpt-'));
  const m = new Transformer(cfg, 11);
  const tok = CharTokenizer.fromAlphabet('abc');
  await saveCheckpoint(m, join(dir, 'v3'), { version: 3, step: 30 }, tok);
  const loaded = loadCheckpoint(join(dir, 'v3'));
  assert.equal(loaded.meta.version, 3);
  assert.deepEqual(loaded.tokenizer!.encode('cab, ok'), tok.encode('cab, ok'));
  assert.deepEqual(await logitsOf(loaded.model), await logitsOf(m));
  const hf = JSON.parse(readFileSync(join(dir, 'v3', 'config.json'), 'utf8'));
  assert.equal(hf.model_type, 'llama');
  assert.equal(hf.num_key_value_heads, 1);
  const { tensors } = readSafetensors(readFileSync(join(dir, 'v3', 'model.safetensors')), 'x');
  // HF stores linear weights as [out, in].
  assert.deepEqual(tensors.get('model.layers.0.self_attn.k_proj.weight')!.shape, [8, 16]);
  assert.deepEqual(tensors.get('model.layers.1.mlp.down_proj.weight')!.shape, [16, 24]);
  m.dispose();
  loaded.model.dispose();
  rmSync(dir, { recursive: true });
});

test('a truncated checkpoint names the file and the tensor', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-ckpt-'));
  const m = new Transformer(cfg, 12);
  await saveCheckpoint(m, join(dir, 'c'), { version: 1 });
  const file = join(dir, 'c', 'model.safetensors');
  const buf = readFileSync(file);
  writeFileSync(file, buf.subarray(0, buf.length - 100));
  assert.throws(
    () => loadCheckpoint(join(dir, 'c')),
    (e: Error) => {
      assert.match(e.message, /model\.safetensors/);
      assert.match(e.message, /field '[a-z_.0-9]+'/);
      assert.match(e.message, /truncated/);
      return true;
    },
  );
  writeFileSync(file, buf.subarray(0, 4));
  assert.throws(() => loadCheckpoint(join(dir, 'c')), /model\.safetensors.*header length/);
  m.dispose();
  rmSync(dir, { recursive: true });
});

test('a mismatched checkpoint names the tensor and both shapes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-ckpt-'));
  const m = new Transformer(cfg, 13);
  await saveCheckpoint(m, join(dir, 'c'), { version: 1 });
  // Claim a bigger MLP in config.json than the weights hold.
  const cf = join(dir, 'c', 'config.json');
  const hf = JSON.parse(readFileSync(cf, 'utf8'));
  hf.intermediate_size = 32;
  writeFileSync(cf, JSON.stringify(hf));
  // Named in config.json's own field, with what the weights hold (checked before anything is built).
  assert.throws(
    () => loadCheckpoint(join(dir, 'c')),
    /config\.json: field 'intermediate_size': 32, but model\.layers\.0\.mlp\.gate_proj\.weight in .*model\.safetensors has 24 outputs/,
  );
  // A missing tensor.
  hf.intermediate_size = 24;
  writeFileSync(cf, JSON.stringify(hf));
  const file = join(dir, 'c', 'model.safetensors');
  const { tensors } = readSafetensors(readFileSync(file), file);
  tensors.delete('model.norm.weight');
  writeFileSync(file, writeSafetensors(new Map([...tensors].map(([k, v]) => [k, { shape: v.shape, data: v.data }]))));
  // Rewritten weights no longer match rft.json's sha256; without one (as in an HF folder) the tensor check speaks.
  const mf = join(dir, 'c', 'rft.json');
  writeFileSync(mf, JSON.stringify({ ...JSON.parse(readFileSync(mf, 'utf8')), weights_sha256: undefined }));
  assert.throws(() => loadCheckpoint(join(dir, 'c')), /field 'model\.norm\.weight': tensor missing/);
  // A broken config.json.
  writeFileSync(cf, '{"hidden_size": ');
  assert.throws(() => loadCheckpoint(join(dir, 'c')), /config\.json: not valid JSON/);
  m.dispose();
  rmSync(dir, { recursive: true });
});
