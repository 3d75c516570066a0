// A decoder-only transformer of the Llama family, written with tfjs ops so it trains on every backend.
// Parameter names follow Hugging Face's Llama layout; matrices are kept as [in, out] internally
// (so every linear layer is a plain matmul) and transposed to HF's [out, in] only in checkpoints.
import { assertWeightsFitGpu } from './gpu-guard.js';
import { tf } from './engine.js';
import { headDim, type ModelConfig } from './config.js';
import { linear, linear2dT, ropeTables } from './layers.js';
import { parameterSpecs } from './parameter-specs.js';
import { Rng } from '../core/rng.js';
import { loraA, loraB, loraModules, loraScale, type LoraConfig } from './lora.js';
import {
  addAdapterHf,
  externalLinear,
  externalLoraLinear,
  externalWeightsAvailable,
  ExternalWeight,
  isExternalizable,
} from './external-weights.js';
import { hiddenStates } from './transformer-forward.js';

export interface LayerCache {
  k: tf.Tensor4D; // [B, KV, Tk, hd]
  v: tf.Tensor4D;
}

/** Key/value cache for incremental decoding. `keyMask` [B, Tk] is 1 for real tokens, 0 for left padding. */
export interface KVCache {
  layers: LayerCache[];
  length: number;
  keyMask: tf.Tensor2D;
}

export interface ForwardOptions {
  /** 1 for real tokens, 0 for padding, [B, T]; padded keys are never attended to. */
  attentionMask?: tf.Tensor2D;
  /** Continue from a cache (decoding); the new cache is returned. */
  cache?: KVCache;
  /** Keep a cache for later decoding steps. */
  returnCache?: boolean;
  /** Embeddings placed before the tokens (vision patches), [B, P, dModel]. */
  prefix?: tf.Tensor3D;
  /** Return the final hidden states too (value head, rewards). */
  returnHidden?: boolean;
  /** A training forward pass: LoRA dropout applies (never when sampling or scoring). */
  train?: boolean;
}

export interface ForwardResult {
  logits: tf.Tensor3D; // [B, T, V]
  hidden?: tf.Tensor3D; // [B, T, D] after the final norm
  cache?: KVCache;
}

let nextModelId = 0;

export class Transformer {
  /** Unique per instance; prefixes the tfjs variable names. */
  readonly id = `model${nextModelId++}`;
  readonly params = new Map<string, tf.Variable>();
  /**
   * Frozen base matrices kept outside the wasm heap (HF layout [out, in], see external-weights.ts),
   * keyed by HF name; a name is either here or in `params`. Empty unless built with `external`.
   */
  readonly external = new Map<string, ExternalWeight>();
  /** Rotary tables (cos/sin [maxSeqLen, headDim] and the rotate-half matrix); read by the native decoder. */
  readonly rope: ReturnType<typeof ropeTables>;

  /** LoRA adapters (A [in, r], B [r, out] per adapted module, keyed `<module>.lora_A.weight`); empty without LoRA. */
  readonly adapters = new Map<string, tf.Variable>();
  lora?: LoraConfig;
  /** A view sharing another model's weights (base()): disposing it frees nothing of theirs. */
  private readonly sharesWeights: boolean;
  private dropoutSeed = 0;

  /**
   * `init: false` allocates zeros (weights about to be loaded: drawing random numbers for a 1B model takes minutes).
   * `shareWith`: no weights of its own, the other model's base weights (see base()).
   * `external`: projections, embedding table and head outside the wasm heap, frozen for good (a model
   * for LoRA training or inference only; needs the native addon, see externalWeightsAvailable()).
   */
  constructor(
    readonly config: ModelConfig,
    seed = 0,
    opts: { init?: boolean; shareWith?: Transformer; external?: boolean } = {},
  ) {
    const c = config;
    this.sharesWeights = !!opts.shareWith;
    if (opts.shareWith) {
      for (const [name, v] of opts.shareWith.params) this.params.set(name, v);
      for (const [name, w] of opts.shareWith.external) this.external.set(name, w);
      this.rope = opts.shareWith.rope;
      return;
    }
    if (opts.external && !externalWeightsAvailable())
      throw new Error(
        'frozen weights outside the wasm heap need the wasm backend with the native addon (vendor/rft-blas.node with sgemmExt)',
      );
    const rng = new Rng(seed);
    const init = opts.init !== false;
    const specs = parameterSpecs(c);
    // On the webgpu engine a weight over the GPU's largest buffer is refused before anything is allocated.
    assertWeightsFitGpu(specs.filter((s) => !(opts.external && isExternalizable(s.name))));
    for (const spec of specs) {
      const n = spec.shape.reduce((a, b) => a * b, 1);
      if (opts.external && isExternalizable(spec.name)) {
        // Stored [out, in]: the embedding table as is, linear weights ([in, out] in memory) transposed.
        const linearW = spec.name !== 'model.embed_tokens.weight';
        const [rows, cols] = linearW ? [spec.shape[1]!, spec.shape[0]!] : [spec.shape[0]!, spec.shape[1]!];
        const w = new ExternalWeight(spec.name, rows, cols);
        if (init && typeof spec.init === 'number') {
          // Same draws in the same order as the in-heap init ([in, out] order), so a seed gives the same model.
          const d = w.data;
          for (let i = 0; i < n; i++) {
            const v = rng.normal() * spec.init;
            if (linearW) d[(i % rows) * cols + Math.floor(i / rows)] = v;
            else d[i] = v;
          }
        }
        this.external.set(spec.name, w);
        continue;
      }
      let t: tf.Tensor;
      if (spec.init === 'ones') t = tf.ones(spec.shape);
      else if (spec.init === 'zeros' || !init) t = tf.zeros(spec.shape);
      else {
        const data = new Float32Array(n);
        for (let i = 0; i < n; i++) data[i] = rng.normal() * spec.init;
        t = tf.tensor(data, spec.shape);
      }
      // tfjs variable names are global: prefix with a per-model id, keep the HF name as the map key.
      this.params.set(spec.name, tf.variable(t, true, `${this.id}/${spec.name}`));
      t.dispose();
    }
    this.rope = ropeTables(c.maxSeqLen, headDim(c), c.ropeTheta, c.ropeScaling);
  }

  p(name: string): tf.Variable {
    const v = this.params.get(name);
    if (!v) throw new Error(`model has no parameter '${name}'`);
    return v;
  }

  /** HF parameter name of a tfjs variable name (gradients from tf.variableGrads are keyed by the latter). */
  paramName(variableName: string): string {
    return variableName.slice(this.id.length + 1);
  }

  /** Trainable variables, for optimisers: the adapters under LoRA, else every parameter. */
  variables(): tf.Variable[] {
    if (!this.lora && this.external.size)
      throw new Error(
        'this model keeps frozen weights outside the wasm heap: only LoRA adapters can train (full fine-tuning needs the weights in the heap)',
      );
    return this.lora ? [...this.adapters.values()] : [...this.params.values()];
  }

  /** Every weight's HF name: in-heap parameters, then those outside the heap. */
  weightNames(): string[] {
    return [...this.params.keys(), ...this.external.keys()];
  }

  /**
   * Adds LoRA adapters to every targeted linear layer and freezes the base weights (non-trainable
   * variables: no gradient, no optimiser state). A is drawn as PEFT's default (kaiming-uniform,
   * bound 1/sqrt(in)) from `seed`; B is zero, so the model's outputs do not change.
   */
  addLora(lora: LoraConfig, seed = 0): this {
    if (this.lora) throw new Error('the model already has LoRA adapters');
    if (this.sharesWeights) throw new Error('a base() view cannot take adapters');
    const rng = new Rng(seed ^ 0x10a);
    for (const m of loraModules(this.config, lora)) {
      const bound = 1 / Math.sqrt(m.in);
      const a = new Float32Array(m.in * lora.rank);
      for (let i = 0; i < a.length; i++) a[i] = (rng.next() * 2 - 1) * bound;
      this.adapters.set(
        loraA(m.module),
        tf.variable(tf.tensor2d(a, [m.in, lora.rank]), true, `${this.id}/${loraA(m.module)}`),
      );
      this.adapters.set(
        loraB(m.module),
        tf.variable(tf.zeros([lora.rank, m.out]), true, `${this.id}/${loraB(m.module)}`),
      );
    }
    for (const v of this.params.values()) v.trainable = false;
    this.lora = lora;
    return this;
  }

  /**
   * The model without its adapters, sharing the (frozen) base weights: LoRA's KL reference, with no
   * second copy of the weights. Dispose it freely: it frees nothing of this model's.
   */
  base(): Transformer {
    return new Transformer(this.config, 0, { shareWith: this });
  }

  /**
   * Folds the adapters into their weights (W += alpha/r A B) and drops them: a plain model again,
   * for a process that only samples (the native decode step reads plain weights).
   */
  mergeAdapters(): this {
    if (!this.lora) return this;
    for (const [name, v] of this.params) {
      const w = this.effectiveWeight(name);
      if (w === v) continue;
      v.assign(w);
      w.dispose();
    }
    // Outside the heap: folded in place (the weights stay there, still frozen).
    for (const [name, w] of this.external) {
      const module = name.slice(0, -'.weight'.length);
      const a = this.adapters.get(loraA(module));
      if (a) addAdapterHf(w.data, a, this.adapters.get(loraB(module))!, loraScale(this.lora));
    }
    for (const v of this.adapters.values()) v.dispose();
    this.adapters.clear();
    for (const v of this.params.values()) v.trainable = true;
    this.lora = undefined;
    return this;
  }

  /** y = x W (+ (alpha/r) drop(x) A B when `module` is adapted). */
  /** Not private: transformer-forward.ts projects through it. */
  proj(x: tf.Tensor, module: string, train: boolean): tf.Tensor {
    const a = this.adapters.get(loraA(module));
    const ext = this.external.get(`${module}.weight`);
    // Outside the heap and no dropout to apply: one fused op (one activation per projection, not four).
    if (ext && a && this.lora && !(train && this.lora.dropout > 0))
      return externalLoraLinear(
        x,
        ext,
        a as tf.Tensor2D,
        this.adapters.get(loraB(module)) as tf.Tensor2D,
        loraScale(this.lora),
      );
    const y = this.linearOf(x, `${module}.weight`);
    if (!a || !this.lora) return y;
    const xin = train && this.lora.dropout > 0 ? tf.dropout(x, this.lora.dropout, undefined, this.dropoutSeed++) : x;
    const low = linear(linear(xin, a as tf.Tensor2D), this.adapters.get(loraB(module)) as tf.Tensor2D);
    return tf.add(y, tf.mul(low, loraScale(this.lora)));
  }

  /**
   * The weight `name` as the model applies it: W + (alpha/r) A B for an adapted linear layer (a new
   * tensor the caller disposes), else the parameter itself.
   */
  effectiveWeight(name: string): tf.Tensor {
    const ext = this.external.get(name);
    // Outside the heap: a new in-heap copy in memory layout (the caller disposes it).
    const w = ext ? ext.toHeapTensor() : this.p(name);
    const module = name.endsWith('.weight') ? name.slice(0, -'.weight'.length) : '';
    const a = this.adapters.get(loraA(module));
    if (!a || !this.lora) return w;
    const scale = loraScale(this.lora);
    const merged = tf.tidy(() => tf.add(w, tf.mul(tf.matMul(a, this.adapters.get(loraB(module))!), scale)));
    if (ext) w.dispose();
    return merged;
  }

  /** y = x W for the weight `name`, wherever it lies (in the heap, or outside it: external-weights.ts). */
  private linearOf(x: tf.Tensor, name: string): tf.Tensor {
    const ext = this.external.get(name);
    return ext ? externalLinear(x, ext) : linear(x, this.p(name) as tf.Tensor2D);
  }

  /** Patch embeddings for images [B, P, patchDim] -> [B, P, D]. */
  embedPatches(patches: tf.Tensor3D): tf.Tensor3D {
    if (!this.config.vision) throw new Error('model has no vision input (config.vision is not set)');
    const P = patches.shape[1];
    const x = tf.add(
      linear(patches, this.p('vision.patch_embed.weight') as tf.Tensor2D),
      this.p('vision.patch_embed.bias'),
    );
    return tf.add(x, tf.slice(this.p('vision.pos_embed'), [0, 0], [P, this.config.dModel])) as tf.Tensor3D;
  }

  /**
   * Forward pass over token ids [B, T] (int32). With a cache, positions continue from cache.length.
   * The caller owns the returned tensors (use inside tf.tidy).
   */
  forward(ids: tf.Tensor2D, opts: ForwardOptions = {}): ForwardResult {
    const { hidden, cache } = this.hiddenStates(ids, opts);
    const out: ForwardResult = { logits: this.logits(hidden) };
    if (opts.returnHidden) out.hidden = hidden;
    if (cache) out.cache = cache;
    return out;
  }

  /** Logits of final hidden states [..., D] -> [..., V]: the tied table or lm_head, wherever it lies. */
  logits(hidden: tf.Tensor): tf.Tensor3D {
    const c = this.config;
    const lead = hidden.shape.slice(0, -1);
    const table = this.external.get('model.embed_tokens.weight');
    return (
      c.tieEmbeddings
        ? table
          ? externalLinear(hidden, table) // the table is stored [vocab, dModel]: x @ table^T as for any external weight
          : tf.reshape<tf.Rank>(
              linear2dT(
                tf.reshape(hidden, [-1, c.dModel]) as tf.Tensor2D,
                this.p('model.embed_tokens.weight') as tf.Tensor2D,
              ) as tf.Tensor,
              [...lead, c.vocabSize],
            )
        : this.linearOf(hidden, 'lm_head.weight')
    ) as tf.Tensor3D;
  }

  /**
   * The output projection as the chunked log-prob op reads it (logprobs.ts): an in-heap tensor
   * ([V, D] for the tied table, [D, V] for lm_head) or a frozen matrix outside the heap ([V, D]).
   */
  headWeight(): { heap: tf.Tensor2D; vocabFirst: boolean } | { external: ExternalWeight } {
    const name = this.config.tieEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
    const ext = this.external.get(name);
    if (ext) return { external: ext };
    return { heap: this.p(name) as tf.Tensor2D, vocabFirst: this.config.tieEmbeddings };
  }

  /**
   * The decoder without its head: final hidden states [B, P + T, D] (after the final norm), and the
   * cache when asked. Log-probs run the head from here in chunks of positions (logprobs.ts), so a
   * batch's [B, T, V] logits never exist at once.
   */
  hiddenStates(ids: tf.Tensor2D, opts: ForwardOptions = {}): { hidden: tf.Tensor3D; cache?: KVCache } {
    return hiddenStates(this, ids, opts);
  }

  /** Scalar value per position from final hidden states [B, T, D] -> [B, T]. */
  values(hidden: tf.Tensor3D): tf.Tensor2D {
    if (!this.config.valueHead) throw new Error('model has no value head (config.valueHead is false)');
    const v = tf.add(linear(hidden, this.p('value_head.weight') as tf.Tensor2D), this.p('value_head.bias'));
    return tf.squeeze(v, [2]) as tf.Tensor2D;
  }

  /** Copy weights (and adapters, when both have them) from another model of the same shape (reference model, explorer sync). */
  copyFrom(other: Transformer): void {
    for (const [name, v] of this.params) {
      const src = other.params.get(name);
      const srcExt = other.external.get(name);
      if (!src && !srcExt) throw new Error(`copyFrom: source model has no parameter '${name}'`);
      if (src) v.assign(src);
      else tf.tidy(() => v.assign(srcExt!.toHeapTensor()));
    }
    for (const [name, w] of this.external) {
      const srcExt = other.external.get(name);
      const src = other.params.get(name);
      if (!src && !srcExt) throw new Error(`copyFrom: source model has no parameter '${name}'`);
      if (srcExt) w.data.set(srcExt.data);
      else {
        const t = name === 'model.embed_tokens.weight' ? src! : tf.transpose(src!);
        w.adopt(Float32Array.from(t.dataSync()));
        if (t !== src) t.dispose();
      }
    }
    for (const [name, v] of this.adapters) {
      const src = other.adapters.get(name);
      if (!src) throw new Error(`copyFrom: source model has no adapter '${name}'`);
      v.assign(src);
    }
  }

  /** An independent copy (with copies of the adapters under LoRA). */
  clone(): Transformer {
    const m = new Transformer(this.config, 0, { init: false, external: this.external.size > 0 });
    if (this.lora) m.addLora(this.lora);
    m.copyFrom(this);
    return m;
  }

  dispose(): void {
    if (this.sharesWeights) {
      this.params.clear();
      this.external.clear();
      return;
    }
    this.external.clear(); // plain JS memory: freed by the garbage collector
    for (const v of this.adapters.values()) v.dispose();
    this.adapters.clear();
    for (const v of this.params.values()) v.dispose();
    this.params.clear();
    this.rope.cos.dispose();
    this.rope.sin.dispose();
    this.rope.rot.dispose();
  }
}
