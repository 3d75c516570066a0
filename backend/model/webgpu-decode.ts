// KV-cache decoding on the webgpu engine in five dispatches a layer (wgsl/decode.ts), over a cache
// allocated once for the whole generation and written in place, with the sampling on the GPU: the
// GPU counterpart of native-decode.ts. tfjs's decode step is ~35 kernels a layer (two matmuls, softmax
// and transposes for attention, a Concat that copies the whole cache every step, Tile for GQA) and
// reads back B x vocabulary logits; at ~70 us a dispatch that, not the arithmetic, was the step's time
// (docs/performance.md). The prompt is prefilled by the tfjs model (its fused attention); its cache is
// copied once into the decoder's own.
import { tf } from './engine.js';
import { headDim } from './config.js';
import type { KVCache, Transformer } from './transformer.js';
import { bindWgsl, type BoundDispatch, recordBound, runWgsl, WgslUniforms, writeWgslTensor } from './wgsl/runner.js';
import {
  attentionKernel,
  embedKernel,
  headTiedGrid,
  headTiedKernel,
  linearGrid,
  linearKernel,
  normKernel,
  sampleKernel,
} from './wgsl/decode.js';

/** RFT_GPU_DECODE=0 turns it off (tfjs's own kernels decode, logits read back: the bench's baseline). */
export const GPU_DECODE_ENV = 'RFT_GPU_DECODE';

/** True when generation on this engine can decode with the fused step: the webgpu engine, switched on. */
export function gpuDecodeAvailable(model: Transformer): boolean {
  return (
    tf.getBackend() === 'webgpu' &&
    process.env[GPU_DECODE_ENV] !== '0' &&
    model.external.size === 0 && // frozen weights outside the heap exist only on wasm
    headDim(model.config) % 2 === 0
  );
}

interface LayerWeights {
  ln1: tf.Tensor;
  q: tf.Tensor;
  k: tf.Tensor;
  v: tf.Tensor;
  /** q|k|v biases side by side (Qwen2). */
  bias?: tf.Tensor;
  /** q_norm|k_norm weights side by side (Qwen3). */
  qkNorm?: tf.Tensor;
  o: tf.Tensor;
  ln2: tf.Tensor;
  gate: tf.Tensor;
  up: tf.Tensor;
  down: tf.Tensor;
  kc: tf.Tensor;
  vc: tf.Tensor;
}

export class GpuDecoder {
  private readonly layers: LayerWeights[] = [];
  /** Tensors this decoder made (LoRA-merged weights, caches, concatenated biases): disposed with it. */
  private readonly owned: tf.Tensor[] = [];
  private readonly mask: tf.Tensor;
  /** cos|sin per position [rows this generation reaches, 2, hd]: one binding (a shader stage has 8 storage bindings). */
  private readonly rope: tf.Tensor;
  private readonly maxT: number;
  private readonly B: number;
  private pos: number;
  /** The step's dispatches, embedding to head, bound once over the decoder's own activation buffers. */
  private readonly bound: BoundDispatch[] = [];
  private readonly uniforms: WgslUniforms[] = [];
  /** The step's token ids [B], written each step. */
  private readonly ids: tf.Tensor;
  /** The attention's uniforms: the position changes each step. */
  private readonly attnU: WgslUniforms;
  /** The last step's logits [B, V], overwritten by the next step. */
  private readonly logits: tf.Tensor;
  /** The sampler over `logits`: its draws [B] in, (token, log-prob) per row out, and its uniforms. */
  private readonly sampler: {
    run: BoundDispatch;
    draws: tf.Tensor;
    out: tf.Tensor;
    u: WgslUniforms;
    temperature: number;
  };
  /** Whether a step has run: before it `logits` holds nothing, and sample / readLogits refuse. */
  private stepped = false;
  /** Dispatches of the last step (the bench and tests read it). */
  dispatches = 0;

  /**
   * A decoder continuing `cache` (a tfjs-prefilled one: copied, the caller still owns and disposes it)
   * for up to `maxNew` more positions, reading the model's weights as they are now (LoRA adapters
   * folded into copies of the adapted weights: the weights the sampling sees are W + (alpha/r) A B).
   */
  constructor(
    private readonly model: Transformer,
    cache: KVCache,
    maxNew: number,
  ) {
    const c = model.config;
    this.pos = cache.length;
    this.maxT = cache.length + Math.max(1, maxNew);
    const own = <T extends tf.Tensor>(t: T): T => {
      this.owned.push(t);
      return t;
    };
    // A failure part way (a weight that cannot be merged, out of GPU memory) frees what was made.
    try {
      const room = this.maxT - cache.length;
      // tf.pad makes new tensors (room >= 1): the decoder's alone, so writing them in place is safe.
      this.mask = own(
        tf.pad(cache.keyMask, [
          [0, 0],
          [0, room],
        ]),
      );
      // Only the rows this generation reaches: the full table is maxSeqLen rows (32k for Qwen), copied per generation.
      const rows = Math.min(this.maxT, c.maxSeqLen);
      this.rope = own(
        tf.tidy(() =>
          tf.stack([tf.slice(model.rope.cos, [0, 0], [rows, -1]), tf.slice(model.rope.sin, [0, 0], [rows, -1])], 1),
        ),
      );
      const w = (name: string) => {
        const t = model.effectiveWeight(name);
        return t === model.params.get(name) ? t : own(t);
      };
      for (let i = 0; i < c.nLayers; i++) {
        const p = `model.layers.${i}`;
        const prev = cache.layers[i]!;
        const pad = (t: tf.Tensor4D) =>
          own(
            tf.pad(t, [
              [0, 0],
              [0, 0],
              [0, room],
              [0, 0],
            ]),
          );
        this.layers.push({
          ln1: model.p(`${p}.input_layernorm.weight`),
          q: w(`${p}.self_attn.q_proj.weight`),
          k: w(`${p}.self_attn.k_proj.weight`),
          v: w(`${p}.self_attn.v_proj.weight`),
          ...(c.attnBias
            ? {
                bias: own(tf.concat(['q', 'k', 'v'].map((x) => model.p(`${p}.self_attn.${x}_proj.bias`)))),
              }
            : {}),
          ...(c.qkNorm
            ? {
                qkNorm: own(
                  tf.concat([model.p(`${p}.self_attn.q_norm.weight`), model.p(`${p}.self_attn.k_norm.weight`)]),
                ),
              }
            : {}),
          o: w(`${p}.self_attn.o_proj.weight`),
          ln2: model.p(`${p}.post_attention_layernorm.weight`),
          gate: w(`${p}.mlp.gate_proj.weight`),
          up: w(`${p}.mlp.up_proj.weight`),
          down: w(`${p}.mlp.down_proj.weight`),
          kc: pad(prev.k),
          vc: pad(prev.v),
        });
      }
      this.B = cache.keyMask.shape[0];
      this.ids = own(tf.zeros([this.B], 'int32'));
      this.logits = own(tf.zeros([this.B, c.vocabSize]));
      this.attnU = this.bindStep();
      const draws = own(tf.zeros([this.B]));
      const out = own(tf.zeros([this.B, 2]));
      const u = new WgslUniforms(sampleKernel, samplerUniforms(c.vocabSize, 1));
      this.uniforms.push(u);
      this.sampler = {
        run: bindWgsl({
          kernel: sampleKernel,
          inputs: [this.logits, draws],
          inouts: [out],
          uniforms: u,
          workgroups: [this.B],
        }),
        draws,
        out,
        u,
        temperature: 1,
      };
    } catch (e) {
      for (const u of this.uniforms) u.dispose();
      tf.dispose(this.owned);
      throw e;
    }
  }

  /**
   * Binds the step's dispatches once: the activations live in buffers of the decoder's own, reused
   * every step (x and x2 alternate as the residual stream), so a step only records them again.
   */
  private bindStep(): WgslUniforms {
    const c = this.model.config;
    const B = this.B;
    const D = c.dModel;
    const hd = headDim(c);
    const H = c.nHeads;
    const KV = c.nKvHeads;
    const eps = c.rmsEps;
    const act = (n: number) => {
      const t = tf.zeros([B, n]);
      this.owned.push(t);
      return t;
    };
    const x = act(D);
    const x2 = act(D);
    const qkv = act((H + 2 * KV) * hd);
    const att = act(H * hd);
    const f = act(c.dFF);
    const uniforms = (kernel: Parameters<typeof bindWgsl>[0]['kernel'], values: Record<string, number>) => {
      const u = new WgslUniforms(kernel, values);
      this.uniforms.push(u);
      return u;
    };
    const bound = this.bound;
    bound.push(
      bindWgsl({
        kernel: embedKernel,
        inputs: [this.ids, this.model.p('model.embed_tokens.weight')],
        inouts: [x],
        uniforms: uniforms(embedKernel, { D }),
        workgroups: [B],
      }),
    );
    // One uniform buffer per linear shape, shared by the layers.
    const linear = (
      v: Parameters<typeof linearKernel>[0],
      din: number,
      ns: [number, number?, number?],
      out: number,
    ) => {
      const kernel = linearKernel(v);
      const u = uniforms(kernel, { B, D: din, N0: ns[0], N1: ns[1] ?? 0, N2: ns[2] ?? 0, eps });
      return (inputs: tf.Tensor[], into: tf.Tensor) =>
        bindWgsl({ kernel, inputs, inouts: [into], uniforms: u, workgroups: linearGrid(B, out) });
    };
    const qkvLin = linear(
      { norm: true, weights: 3, bias: c.attnBias, residual: false, swiglu: false },
      D,
      [H * hd, KV * hd, KV * hd],
      (H + 2 * KV) * hd,
    );
    const noNorm = { norm: false, weights: 1, bias: false, residual: true, swiglu: false } as const;
    const oLin = linear(noNorm, H * hd, [D], D);
    const upLin = linear({ norm: true, weights: 2, bias: false, residual: false, swiglu: true }, D, [c.dFF], c.dFF);
    const downLin = linear(noNorm, c.dFF, [D], D);
    const attnKernel = attentionKernel(hd, c.qkNorm);
    const attnU = uniforms(attnKernel, this.attentionUniforms());
    for (const L of this.layers) {
      bound.push(
        qkvLin([x, L.ln1, L.q, L.k, L.v, ...(L.bias ? [L.bias] : [])], qkv),
        bindWgsl({
          kernel: attnKernel,
          inputs: [qkv, this.rope, ...(L.qkNorm ? [L.qkNorm] : [])],
          inouts: [this.mask, L.kc, L.vc, att],
          uniforms: attnU,
          workgroups: [H, B],
        }),
        oLin([att, L.o, x], x2),
        upLin([x2, L.ln2, L.gate, L.up], f),
        downLin([f, L.down, x2], x),
      );
    }
    const h = act(D);
    const V = c.vocabSize;
    const table = this.model.p('model.embed_tokens.weight');
    bound.push(
      bindWgsl({
        kernel: normKernel,
        inputs: [x, this.model.p('model.norm.weight')],
        inouts: [h],
        uniforms: uniforms(normKernel, { D, eps }),
        workgroups: [B],
      }),
      c.tieEmbeddings
        ? bindWgsl({
            kernel: headTiedKernel,
            inputs: [h, table],
            inouts: [this.logits],
            uniforms: uniforms(headTiedKernel, { B, D, V }),
            workgroups: headTiedGrid(B, V),
          })
        : linear(
            { norm: false, weights: 1, bias: false, residual: false, swiglu: false },
            D,
            [V],
            V,
          )([h, this.model.p('lm_head.weight')], this.logits),
    );
    return attnU;
  }

  /** The attention's uniforms at the current position. */
  private attentionUniforms(): Record<string, number> {
    const c = this.model.config;
    const hd = headDim(c);
    return { pos: this.pos, maxT: this.maxT, H: c.nHeads, KV: c.nKvHeads, scale: 1 / Math.sqrt(hd), eps: c.rmsEps };
  }

  /** Positions decoded so far plus the prompt's: the position the next step writes. */
  get position(): number {
    return this.pos;
  }

  /**
   * One decode step: the rows' next tokens in; their logits stay on the GPU, for `sample` (or
   * `readLogits`) to take before the next step overwrites them. Returns once the step is recorded.
   */
  step(tokens: Int32Array): void {
    const c = this.model.config;
    if (this.pos >= this.maxT || this.pos >= c.maxSeqLen)
      throw new Error(
        `GpuDecoder: no room past position ${this.pos} (made for ${this.maxT}, maxSeqLen ${c.maxSeqLen})`,
      );
    if (tokens.length !== this.B) throw new Error(`GpuDecoder: ${tokens.length} tokens for a batch of ${this.B}`);
    writeWgslTensor(this.ids, tokens);
    this.attnU.set(this.attentionUniforms());
    recordBound(this.bound);
    this.pos++;
    this.dispatches = this.bound.length;
    this.stepped = true;
  }

  /**
   * The next token of each row from the last step's logits, sampled on the GPU as `sampleOnGpu` does
   * (one draw per row in [0, 1); greedy at temperature <= 0): 2 x B numbers read back.
   */
  async sample(draws: Float32Array, temperature: number): Promise<{ token: number; logprob: number }[]> {
    this.mustHaveStepped('sample');
    const s = this.sampler;
    if (temperature !== s.temperature) {
      s.u.set(samplerUniforms(this.model.config.vocabSize, temperature));
      s.temperature = temperature;
    }
    writeWgslTensor(s.draws, draws);
    recordBound([s.run]);
    return picks((await s.out.data()) as Float32Array, this.B);
  }

  /** The last step's logits [B x V], read back (top-k / top-p sampling on the host, tests). */
  async readLogits(): Promise<Float32Array> {
    this.mustHaveStepped('readLogits');
    // tfjs's cached read: the next step's write drops that cache, it does not change this array.
    return (await this.logits.data()) as Float32Array;
  }

  private mustHaveStepped(what: string): void {
    if (!this.stepped)
      throw new Error(`GpuDecoder.${what}: no step has run yet (the prompt's logits are the prefill's)`);
  }

  dispose(): void {
    for (const u of this.uniforms) u.dispose();
    this.uniforms.length = 0;
    this.bound.length = 0;
    tf.dispose(this.owned);
    this.owned.length = 0;
    this.layers.length = 0;
  }
}

/**
 * The next token of each row of `logits` [B, V], sampled on the GPU without top-k / top-p (sampling.ts
 * sampleToken's walk, at the row's draw in [0, 1): `draws[b]`), or greedy at temperature <= 0.
 * Returns [token, log-prob] per row, read back as 2 x B numbers.
 */
export async function sampleOnGpu(
  logits: tf.Tensor2D,
  draws: Float32Array,
  temperature: number,
): Promise<{ token: number; logprob: number }[]> {
  const [B, V] = logits.shape;
  const u = tf.tensor1d(draws);
  const [out] = runWgsl({
    kernel: sampleKernel,
    inputs: [logits, u],
    outputs: [{ shape: [B, 2] }],
    uniforms: samplerUniforms(V, temperature),
    workgroups: [B],
  });
  u.dispose();
  const r = (await out!.data()) as Float32Array;
  out!.dispose();
  return picks(r, B);
}

/** The sampler's uniforms: greedy at temperature <= 0, else logits scaled by 1 / temperature. */
function samplerUniforms(V: number, temperature: number): Record<string, number> {
  const greedy = temperature <= 0;
  return { V, invT: greedy ? 1 : 1 / temperature, greedy: greedy ? 1 : 0 };
}

function picks(r: Float32Array, B: number): { token: number; logprob: number }[] {
  return Array.from({ length: B }, (_, b) => ({ token: r[2 * b]!, logprob: r[2 * b + 1]! }));
}
