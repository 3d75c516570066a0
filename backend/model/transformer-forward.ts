// The transformer's forward pass over a batch: embeddings (with an image prefix), the decoder
// layers with RoPE, grouped-query attention (fused, native or unfused) and an optional KV cache, the
// final norm. A method of Transformer (transformer.ts) in a file of its own.
import { tf } from './engine.js';
import { headDim } from './config.js';
import { applyRope, applyRopeSeqFirst, embed, rmsNorm, swiglu } from './layers.js';
import { nativeAttention, nativeAttentionAvailable } from './native-attention.js';
import { fusedOps } from './fused-ops.js';
import { attentionBias, repeatKv } from './attention-unfused.js';
import { externalEmbed } from './external-weights.js';
import type { ForwardOptions, KVCache, LayerCache, Transformer } from './transformer.js';

/**
 * The decoder without its head: final hidden states [B, P + T, D] (after the final norm), and the
 * cache when asked. Log-probs run the head from here in chunks of positions (logprobs.ts), so a
 * batch's [B, T, V] logits never exist at once.
 */
export function hiddenStates(
  model: Transformer,
  ids: tf.Tensor2D,
  opts: ForwardOptions = {},
): { hidden: tf.Tensor3D; cache?: KVCache } {
  const c = model.config;
  const B = ids.shape[0];
  const hd = headDim(c);
  const start = opts.cache?.length ?? 0;
  const train = opts.train === true;
  let { x, mask } = embedInputs(model, ids, opts);
  const T = x.shape[1];
  if (start + T > c.maxSeqLen)
    throw new Error(`sequence of ${start + T} tokens exceeds the model's maxSeqLen ${c.maxSeqLen}`);
  const keyMask: tf.Tensor2D = opts.cache
    ? (tf.concat([opts.cache.keyMask, mask ?? tf.ones([B, T])], 1) as tf.Tensor2D)
    : (mask ?? (tf.ones([B, T]) as tf.Tensor2D));
  const Tk = start + T;
  // Without a cache to continue, attention is one fused op: native with the addon, WGSL on webgpu.
  const fused = opts.cache ? undefined : nativeAttentionAvailable() ? nativeAttention : fusedOps().attention;
  const bias = fused ? undefined : attentionBias(keyMask, start, T, Tk);
  const newLayers: LayerCache[] = [];
  const rep = c.nHeads / c.nKvHeads;
  for (let i = 0; i < c.nLayers; i++) {
    const p = `model.layers.${i}`;
    const h = rmsNorm(x, model.p(`${p}.input_layernorm.weight`) as tf.Tensor1D, c.rmsEps);
    // q/k/v projections in [B, T, heads, hd], with Qwen2's biases and Qwen3's per-head q/k norms.
    const proj = (w: 'q' | 'k' | 'v', n: number) => {
      let y = model.proj(h, `${p}.self_attn.${w}_proj`, train);
      if (c.attnBias) y = tf.add(y, model.p(`${p}.self_attn.${w}_proj.bias`));
      let y4 = tf.reshape(y, [B, T, n, hd]) as tf.Tensor4D;
      if (c.qkNorm && w !== 'v')
        y4 = rmsNorm(y4, model.p(`${p}.self_attn.${w}_norm.weight`) as tf.Tensor1D, c.rmsEps) as tf.Tensor4D;
      return y4;
    };
    let merged: tf.Tensor;
    if (fused) {
      // One fused op on the projections' [B, T, heads, hd] layout (no transposes, no bias tensor).
      const q = applyRopeSeqFirst(proj('q', c.nHeads), model.rope.cos, model.rope.sin, model.rope.rot, start);
      const k = applyRopeSeqFirst(proj('k', c.nKvHeads), model.rope.cos, model.rope.sin, model.rope.rot, start);
      const v = proj('v', c.nKvHeads);
      if (opts.returnCache) newLayers.push({ k: tf.transpose(k, [0, 2, 1, 3]), v: tf.transpose(v, [0, 2, 1, 3]) });
      merged = tf.reshape(fused(q, k, v, keyMask), [B, T, c.nHeads * hd]);
    } else {
      const heads = (w: 'q' | 'k' | 'v', n: number) => tf.transpose(proj(w, n), [0, 2, 1, 3]) as tf.Tensor4D;
      let q = applyRope(heads('q', c.nHeads), model.rope.cos, model.rope.sin, model.rope.rot, start);
      let k = applyRope(heads('k', c.nKvHeads), model.rope.cos, model.rope.sin, model.rope.rot, start);
      let v = heads('v', c.nKvHeads);
      if (opts.cache) {
        const prev = opts.cache.layers[i]!;
        k = tf.concat([prev.k, k], 2);
        v = tf.concat([prev.v, v], 2);
      }
      if (opts.returnCache) newLayers.push({ k, v });
      if (rep > 1) {
        k = repeatKv(k, rep);
        v = repeatKv(v, rep);
      }
      q = tf.mul(q, 1 / Math.sqrt(hd));
      const scores = tf.add(tf.matMul(q, k, false, true), bias!);
      const att = tf.matMul(tf.softmax(scores), v); // [B, H, T, hd]
      merged = tf.reshape(tf.transpose(att, [0, 2, 1, 3]), [B, T, c.nHeads * hd]);
    }
    x = tf.add(x, model.proj(merged, `${p}.self_attn.o_proj`, train)) as tf.Tensor3D;
    const h2 = rmsNorm(x, model.p(`${p}.post_attention_layernorm.weight`) as tf.Tensor1D, c.rmsEps);
    const gate = model.proj(h2, `${p}.mlp.gate_proj`, train);
    const up = model.proj(h2, `${p}.mlp.up_proj`, train);
    x = tf.add(x, model.proj(swiglu(gate, up), `${p}.mlp.down_proj`, train)) as tf.Tensor3D;
  }
  const hidden = rmsNorm(x, model.p('model.norm.weight') as tf.Tensor1D, c.rmsEps) as tf.Tensor3D;
  return opts.returnCache ? { hidden, cache: { layers: newLayers, length: Tk, keyMask } } : { hidden };
}

/** The token embeddings [B, T, D], after the image prefix when one is given, and the mask to match. */
function embedInputs(
  model: Transformer,
  ids: tf.Tensor2D,
  opts: ForwardOptions,
): { x: tf.Tensor3D; mask: tf.Tensor2D | undefined } {
  const [B, Tt] = ids.shape;
  const flatIds = tf.reshape(ids, [-1]) as tf.Tensor1D;
  const table = model.external.get('model.embed_tokens.weight');
  let x = tf.reshape(
    table ? externalEmbed(table, flatIds) : embed(model.p('model.embed_tokens.weight') as tf.Tensor2D, flatIds),
    [B, Tt, model.config.dModel],
  ) as tf.Tensor3D;
  let mask = opts.attentionMask;
  if (opts.prefix) {
    if (opts.cache) throw new Error('a prefix can only be given on the first forward pass');
    const P = opts.prefix.shape[1];
    x = tf.concat([opts.prefix, x], 1);
    if (mask) mask = tf.concat([tf.ones([B, P]), mask], 1) as tf.Tensor2D;
  }
  return { x, mask };
}
