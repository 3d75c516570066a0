// config.json against the safetensors headers, in config.json's own field names, before anything is
// built from the config: a `num_hidden_layers: 1e9` would otherwise list a billion layers' tensors
// (minutes and gigabytes before failing) and an `intermediate_size: 1e8` would size a typed array
// from it. Each size the headers can tell (layers, vocabulary, width, MLP width, KV heads) must match.
import type { ModelConfig } from './config.js';
import { headDim } from './config.js';
import type { TensorEntry } from './safetensors.js';
import { InputError } from '../core/errors.js';

export function checkConfigAgainstHeaders(c: ModelConfig, entries: Map<string, TensorEntry>, cfgFile: string): void {
  const fail = (field: string, message: string): never => {
    throw new InputError(message, { file: cfgFile, field });
  };
  const layers = new Set<number>();
  for (const name of entries.keys()) {
    const m = /^model\.layers\.(\d+)\./.exec(name);
    if (m) layers.add(Number(m[1]));
  }
  const weightsFile = [...entries.values()][0]?.file ?? 'the weights';
  const held = layers.size
    ? `${layers.size} layers (model.layers.0 to model.layers.${Math.max(...layers)})`
    : 'no layers';
  if (c.nLayers !== layers.size) fail('num_hidden_layers', `${c.nLayers}, but ${weightsFile} holds ${held}`);

  // HF layout: linear weights [out, in]; the embedding [vocab, hidden].
  const dims = (name: string): number[] | undefined => entries.get(name)?.shape;
  const embed = dims('model.embed_tokens.weight');
  if (embed) {
    if (embed[0] !== c.vocabSize)
      fail('vocab_size', `${c.vocabSize}, but model.embed_tokens.weight in ${weightsFile} has ${embed[0]} rows`);
    if (embed[1] !== c.dModel)
      fail('hidden_size', `${c.dModel}, but model.embed_tokens.weight in ${weightsFile} is ${embed[1]} wide`);
  }
  const gate = dims('model.layers.0.mlp.gate_proj.weight');
  if (gate && gate[0] !== c.dFF)
    fail(
      'intermediate_size',
      `${c.dFF}, but model.layers.0.mlp.gate_proj.weight in ${weightsFile} has ${gate[0]} outputs`,
    );
  const k = dims('model.layers.0.self_attn.k_proj.weight');
  const hd = headDim(c);
  if (k && k[0] !== c.nKvHeads * hd)
    fail(
      'num_key_value_heads',
      `${c.nKvHeads} heads of ${hd} = ${c.nKvHeads * hd}, but model.layers.0.self_attn.k_proj.weight in ${weightsFile} has ${k[0]} outputs`,
    );
  const q = dims('model.layers.0.self_attn.q_proj.weight');
  if (q && q[0] !== c.nHeads * hd)
    fail(
      'num_attention_heads',
      `${c.nHeads} heads of ${hd} = ${c.nHeads * hd}, but model.layers.0.self_attn.q_proj.weight in ${weightsFile} has ${q[0]} outputs`,
    );
}
