// Hostile checkpoints: config.json sizes checked against the safetensors headers before anything is
// built (in config.json's own field names), the weights' sha256 in rft.json checked at load, and
// rft.json itself validated field by field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { loadCheckpoint, saveCheckpoint } from '../../backend/model/checkpoint.js';
import { checkStageIndex, sha256File } from '../../backend/model/checkpoint-meta.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-ckpt-hostile-'));
const good = join(root, 'v1');
{
  const m = new Transformer(
    makeConfig({ vocabSize: 300, dModel: 16, nLayers: 2, nHeads: 2, nKvHeads: 1, dFF: 24, maxSeqLen: 32 }),
    1,
  );
  await saveCheckpoint(m, good, { version: 1, step: 3, stage_index: 1 });
  m.dispose();
}
let n = 0;
/** A copy of the good checkpoint with `edit` applied to one of its JSON files. */
function variant(file: 'config.json' | 'rft.json', edit: (j: Record<string, unknown>) => void): string {
  const d = join(root, `c${n++}`);
  cpSync(good, d, { recursive: true });
  const j = JSON.parse(readFileSync(join(d, file), 'utf8')) as Record<string, unknown>;
  edit(j);
  writeFileSync(join(d, file), JSON.stringify(j));
  return d;
}
function refused(dir: string, file: string, field: string, re: RegExp): void {
  assert.throws(
    () => loadCheckpoint(dir),
    (e: Error) => {
      assert.ok(e.message.startsWith(`${join(dir, file)}: field '${field}': `), e.message);
      assert.match(e.message, re);
      assert.equal(e.message.split('\n').length, 1, 'one line, not a schema dump');
      return true;
    },
  );
}

test('the good checkpoint loads, and rft.json carries the sha256 of its weights', () => {
  const meta = JSON.parse(readFileSync(join(good, 'rft.json'), 'utf8')) as { weights_sha256: string };
  assert.equal(meta.weights_sha256, sha256File(join(good, 'model.safetensors')));
  const l = loadCheckpoint(good);
  assert.equal(l.meta.version, 1);
  l.model.dispose();
});

test('config.json sizes against the headers, before anything is built, in the file field names', () => {
  // Was: 104 s and 4.3 GB, then Aborted() without the file.
  refused(
    variant('config.json', (c) => (c.num_hidden_layers = 1e9)),
    'config.json',
    'num_hidden_layers',
    /1000000000, but .*model\.safetensors holds 2 layers \(model\.layers\.0 to model\.layers\.1\)/,
  );
  // Was: Invalid typed array length.
  refused(
    variant('config.json', (c) => (c.intermediate_size = 1e8)),
    'config.json',
    'intermediate_size',
    /100000000, but model\.layers\.0\.mlp\.gate_proj\.weight .* has 24 outputs/,
  );
  refused(
    variant('config.json', (c) => (c.vocab_size = 301)),
    'config.json',
    'vocab_size',
    /301, but model\.embed_tokens\.weight .* has 300 rows/,
  );
  refused(
    variant('config.json', (c) => (c.num_key_value_heads = 2)),
    'config.json',
    'num_key_value_heads',
    /has 8 outputs/,
  );
  refused(
    variant('config.json', (c) => (c.hidden_size = 'x')),
    'config.json',
    'hidden_size',
    /expected a number, got "x"/,
  );
});

test('config.json sizes out of range name the config.json key in one line, not a schema dump with internal names (issue 24)', () => {
  // Was: `invalid model config: [ { "code": "too_small", ... "path": [ "nLayers" ] } ]`.
  refused(
    variant('config.json', (c) => (c.num_hidden_layers = -1)),
    'config.json',
    'num_hidden_layers',
    /^.*got -1: number must be greater than 0$/,
  );
  refused(
    variant('config.json', (c) => (c.vocab_size = 0)),
    'config.json',
    'vocab_size',
    /got 0: number must be greater than 0$/,
  );
  refused(
    variant('config.json', (c) => (c.num_attention_heads = 2.5)),
    'config.json',
    'num_attention_heads',
    /got 2\.5: expected integer/,
  );
  // makeConfig's shape checks (dModel / nHeads / nKvHeads) in config.json's keys too.
  refused(
    variant('config.json', (c) => (c.num_attention_heads = 3)),
    'config.json',
    'num_attention_heads',
    /^.*hidden_size 16 is not divisible by num_attention_heads 3/,
  );
  refused(
    variant('config.json', (c) => (c.num_key_value_heads = 3)),
    'config.json',
    'num_key_value_heads',
    /num_attention_heads 2 is not divisible by num_key_value_heads 3$/,
  );
});

test('overlapping tensors in a safetensors file are refused, naming both (the format forbids shared bytes)', () => {
  const d = join(root, 'overlap');
  cpSync(good, d, { recursive: true });
  const f = join(d, 'model.safetensors');
  const b = readFileSync(f);
  const hlen = Number(b.readBigUInt64LE(0));
  const header = JSON.parse(b.subarray(8, 8 + hlen).toString('utf8')) as Record<
    string,
    { data_offsets: [number, number] }
  >;
  // model.norm.weight (16 floats) moved onto the first 64 bytes of the embedding table; same header length.
  const norm = header['model.norm.weight']!;
  norm.data_offsets = [0, 64];
  const text = JSON.stringify(header).padEnd(hlen, ' ');
  assert.equal(Buffer.byteLength(text), hlen);
  b.write(text, 8, 'utf8');
  writeFileSync(f, b);
  assert.throws(
    () => loadCheckpoint(d),
    (e: Error) =>
      e.message.startsWith(
        `${f}: field 'model.norm.weight': data_offsets [0, 64] overlap those of 'model.embed_tokens.weight' [0, 19200]`,
      ) || assert.fail(e.message),
  );
});

test('weights changed after saving (finite garbage) are refused by their sha256', () => {
  const d = join(root, 'garbage');
  cpSync(good, d, { recursive: true });
  const f = join(d, 'model.safetensors');
  const b = readFileSync(f);
  // 8 KB of finite floats over the end of the data: every other check passes.
  const garbage = new Float32Array(2048).fill(0.25);
  Buffer.from(garbage.buffer).copy(b, b.length - 8192);
  writeFileSync(f, b);
  assert.throws(
    () => loadCheckpoint(d),
    (e: Error) =>
      e.message.startsWith(`${f}: sha256 `) && /does not match weights_sha256 .* in rft\.json/.test(e.message),
  );
});

test('rft.json is validated field by field', () => {
  refused(
    variant('rft.json', (m) => (m.version = 'x')),
    'rft.json',
    'version',
    /expected a whole number >= 0, got "x"/,
  );
  refused(
    variant('rft.json', (m) => (m.stage_index = -1)),
    'rft.json',
    'stage_index',
    /got -1/,
  );
  refused(
    variant('rft.json', (m) => (m.step = 1.5)),
    'rft.json',
    'step',
    /got 1\.5/,
  );
  refused(
    variant('rft.json', (m) => (m.weights_sha256 = 'zz')),
    'rft.json',
    'weights_sha256',
    /64 hex digits/,
  );
  refused(
    variant('rft.json', (m) => (m.base_accuracy = 7)),
    'rft.json',
    'base_accuracy',
    /from 0 to 1/,
  );
});

test('stage_index 99 is not a finished run: refused against the run stages', () => {
  const dir = variant('rft.json', (m) => (m.stage_index = 99));
  const l = loadCheckpoint(dir);
  l.model.dispose();
  assert.throws(
    () => checkStageIndex(l.meta, 2, dir),
    new RegExp(
      `${join(dir, 'rft.json').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: field 'stage_index': 99 is not a stage of this run \\(it has 2; 2 means all done\\)`,
    ),
  );
  assert.equal(checkStageIndex({ version: 1, stage_index: 2 }, 2, dir), 2);
  assert.equal(checkStageIndex({ version: 1 }, 2, dir), 0);
});
