// KV-cache decoding with one native call per token (native/rft_blas.c `decode`): the whole step
// (embedding, every layer, final norm, logits) runs in C on the weights where they lie (the wasm
// heap, or Node buffers for frozen weights outside it: external-weights.ts), so a decode step costs
// one call instead of a few hundred tfjs kernels. The prompt is prefilled by the same C code (all its
// positions in one call: the projections as products of B * T rows), or a cache the tfjs model
// prefilled (Transformer.forward) is copied once into the decoder's own buffer.
import { InputError } from '../core/errors.js';
import * as tf from '@tensorflow/tfjs-core';
import { headDim } from './config.js';
import { nativeAddon, nativeBlasActive } from './native-blas.js';
import type { KVCache, Transformer } from './transformer.js';

// Index layouts shared with native/rft_blas.c (enums C_*, O_*, L_*).
const C = { B: 0, D: 1, H: 2, KV: 3, HD: 4, F: 5, V: 6, L: 7, MAXT: 8, POS: 9, TIED: 10, T: 11, N: 12 } as const;
const O = {
  EMBED: 0,
  NORM: 1,
  HEAD: 2,
  COS: 3,
  SIN: 4,
  MASK: 5,
  X: 6,
  H: 7,
  Q: 8,
  K: 9,
  V: 10,
  ATT: 11,
  G: 12,
  U: 13,
  LOGITS: 14,
  SCORES: 15,
  LAYERS: 16,
} as const;
const L = { IN: 0, Q: 1, K: 2, V: 3, O: 4, POST: 5, GATE: 6, UP: 7, DOWN: 8, KC: 9, VC: 10, N: 11 } as const;
const LAYER_WEIGHTS = [
  'input_layernorm',
  'self_attn.q_proj',
  'self_attn.k_proj',
  'self_attn.v_proj',
  'self_attn.o_proj',
  'post_attention_layernorm',
  'mlp.gate_proj',
  'mlp.up_proj',
  'mlp.down_proj',
];

interface WasmBackendLike {
  wasm: { HEAPU8: Uint8Array };
  dataIdMap: { get(id: unknown): { memoryOffset: number | null } | undefined };
}

/**
 * True when generation can decode natively (wasm backend with the addon's decode, switched on) and
 * the model is Llama or Qwen2 (q/k/v biases, with an addon that has decodeBias): the C step has no q/k
 * norms (Qwen3), and no LoRA adapters.
 */
export function nativeDecodeAvailable(model?: Transformer): boolean {
  if (model?.config.qkNorm) return false;
  // q/k/v biases (Qwen2): builds of the addon from before decodeBias would refuse their slots.
  if (model?.config.attnBias && nativeAddon()?.decodeBias !== true) return false;
  // LoRA adapters live outside the weights the C step reads.
  if (model && model.adapters.size > 0) return false;
  // Frozen weights outside the wasm heap (external-weights.ts): read there by builds that take them.
  if (model && model.external.size > 0 && nativeAddon()?.decodeExternal !== true) return false;
  return (
    nativeBlasActive() &&
    typeof nativeAddon()?.decode === 'function' &&
    tf.getBackend() === 'wasm' &&
    process.env.RFT_NATIVE_DECODE !== '0'
  );
}

/** BLAS threads of a native decode step: a number, or 'auto' (probe 1 and 2 threads, keep the faster). */
export type DecodeThreads = number | 'auto';

/** The decode threads from RFT_DECODE_THREADS (a positive integer or 'auto'); 1 when unset. */
export function decodeThreadsFromEnv(): DecodeThreads {
  const v = process.env.RFT_DECODE_THREADS;
  if (v === undefined || v === '') return 1;
  if (v === 'auto') return 'auto';
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new InputError(`RFT_DECODE_THREADS: expected a positive integer or 'auto', got '${v}'`);
  return n;
}

/**
 * 'auto' thread choice: alternate 1 and 2 threads for the first PROBE steps, then keep the faster,
 * probing again every REPROBE steps (on a shared machine the better count changes with the load).
 */
const PROBE = 4;
const REPROBE = 64;

/** Rows (sequences x positions) a prefill call takes at most: a longer prompt is fed in chunks, so the scratch stays small. */
const PREFILL_ROWS = 256;

/** Left-padded prompt ids and their mask (1 real, 0 padding), both [B, T] row-major. */
export interface PromptBatch {
  ids: Int32Array;
  mask: Float32Array;
  B: number;
  T: number;
  /** Position of the batch's first column (default 0): a prompt placed later so its rows can join a running decoder (adoptRow). */
  start?: number;
}

export class NativeDecoder {
  private readonly cfg = new Int32Array(C.N);
  private readonly off: Float64Array;
  private readonly state: Float32Array;
  private readonly logitsAt: number;
  private readonly tokens: Int32Array;
  /** Per weight slot, the weight outside the heap (undefined where it is on the heap). */
  private readonly ext: (Float32Array | undefined)[];

  private readonly probe = { steps: 0, ms: [0, 0], n: [0, 0], chosen: 1 };
  /** The prompt still to prefill (a decoder made from a PromptBatch), until prefill() runs. */
  private prompt: PromptBatch | undefined;
  /** Positions per prefill call. */
  private readonly chunk: number;
  /** Rows the buffers hold (calls may compute fewer: setActiveRows). */
  private readonly allocated: number;

  /**
   * A decoder for B rows with room for `maxNew` more tokens, continuing `init`: a tfjs-prefilled
   * cache (its length is the next position; the tensors are copied, the caller still owns and
   * disposes them), or a prompt batch that prefill() then runs natively.
   */
  constructor(
    private readonly model: Transformer,
    init: KVCache | PromptBatch,
    maxNew: number,
    private readonly threads: DecodeThreads = 1,
  ) {
    if (threads !== 'auto' && !(Number.isInteger(threads) && threads >= 1))
      throw new Error(`native decode: threads must be a positive integer or 'auto', got ${threads}`);
    const c = model.config;
    const cache = 'layers' in init ? init : undefined;
    const prompt = cache ? undefined : (init as PromptBatch);
    if (
      prompt &&
      (prompt.ids.length !== prompt.B * prompt.T || prompt.mask.length !== prompt.B * prompt.T || prompt.T < 1)
    ) {
      throw new Error(`native decode: prompt ids and mask must both hold B * T = ${prompt.B} * ${prompt.T} entries`);
    }
    const B = cache ? cache.keyMask.shape[0] : prompt!.B;
    const hd = headDim(c);
    const Tp = cache ? cache.length : prompt!.T;
    const start = prompt?.start ?? 0;
    // Scratch rows: one per sequence when decoding, B * chunk when prefilling.
    this.chunk = prompt ? Math.max(1, Math.min(Tp, Math.floor(PREFILL_ROWS / B))) : 1;
    const rows = B * this.chunk;
    this.allocated = B;
    const maxT = Math.min(c.maxSeqLen, start + Tp + maxNew);
    const cfg = this.cfg;
    cfg[C.B] = B;
    cfg[C.D] = c.dModel;
    cfg[C.H] = c.nHeads;
    cfg[C.KV] = c.nKvHeads;
    cfg[C.HD] = hd;
    cfg[C.F] = c.dFF;
    cfg[C.V] = c.vocabSize;
    cfg[C.L] = c.nLayers;
    cfg[C.MAXT] = maxT;
    cfg[C.POS] = cache ? Tp : start;
    cfg[C.TIED] = c.tieEmbeddings ? 1 : 0;
    cfg[C.T] = 1;
    // State buffer: mask, scratch, logits, then each layer's K and V caches [B, KV, maxT, hd].
    let at = 0;
    const take = (n: number) => {
      const o = at;
      at += n;
      return o * 4;
    };
    // q/k/v biases (Qwen2): 3 slots per layer after the layers' own (native/rft_blas.c).
    this.off = new Float64Array(O.LAYERS + c.nLayers * (L.N + (c.attnBias ? 3 : 0)));
    this.ext = new Array<Float32Array | undefined>(this.off.length).fill(undefined);
    this.off[O.MASK] = take(B * maxT);
    this.off[O.X] = take(rows * c.dModel);
    this.off[O.H] = take(rows * c.dModel);
    this.off[O.Q] = take(rows * c.nHeads * hd);
    this.off[O.K] = take(rows * c.nKvHeads * hd);
    this.off[O.V] = take(rows * c.nKvHeads * hd);
    this.off[O.ATT] = take(rows * c.nHeads * hd);
    this.off[O.G] = take(rows * c.dFF);
    this.off[O.U] = take(rows * c.dFF);
    this.off[O.LOGITS] = take(B * c.vocabSize);
    this.off[O.SCORES] = take(maxT);
    const cacheSize = B * c.nKvHeads * maxT * hd;
    for (let l = 0; l < c.nLayers; l++) {
      this.off[O.LAYERS + l * L.N + L.KC] = take(cacheSize);
      this.off[O.LAYERS + l * L.N + L.VC] = take(cacheSize);
    }
    this.state = new Float32Array(at);
    this.logitsAt = this.off[O.LOGITS]! / 4;
    this.tokens = new Int32Array(rows);
    if (prompt) {
      // The key mask of the prompt's positions; the C prefill writes the caches.
      for (let b = 0; b < B; b++) this.state.set(prompt.mask.subarray(b * Tp, (b + 1) * Tp), b * maxT + start);
      this.prompt = prompt;
      return;
    }
    // Copy the prefilled cache and key mask in.
    this.state.set(cache!.keyMask.dataSync() as Float32Array, 0);
    for (let b = B - 1; b >= 0; b--) {
      // Rows of the mask move from stride Tp to stride maxT (backwards, so nothing is overwritten early).
      this.state.copyWithin(b * maxT, b * Tp, b * Tp + Tp);
      this.state.fill(0, b * maxT + Tp, (b + 1) * maxT);
    }
    const KV = c.nKvHeads;
    cache!.layers.forEach((layer, l) => {
      for (const [which, t] of [
        [L.KC, layer.k],
        [L.VC, layer.v],
      ] as const) {
        const src = t.dataSync() as Float32Array; // [B, KV, Tp, hd]
        const base = this.off[O.LAYERS + l * L.N + which]! / 4;
        for (let r = 0; r < B * KV; r++)
          this.state.set(src.subarray(r * Tp * hd, (r + 1) * Tp * hd), base + r * maxT * hd);
      }
    });
  }

  /**
   * Run the prompt of a decoder made from a PromptBatch through every layer (in chunks of positions),
   * filling the caches; returns the logits of its last position [B * V] (a view, valid until the next step).
   */
  prefill(): Float32Array {
    const p = this.prompt;
    if (!p) throw new Error('native decode: prefill() needs a decoder made from a prompt batch, once');
    this.prompt = undefined;
    let out: Float32Array | undefined;
    for (let t0 = 0; t0 < p.T; t0 += this.chunk) {
      const n = Math.min(this.chunk, p.T - t0);
      for (let b = 0; b < p.B; b++) this.tokens.set(p.ids.subarray(b * p.T + t0, b * p.T + t0 + n), b * n);
      out = this.run(n);
    }
    return out!;
  }

  /** Feed one token per row at the next position; returns the logits [B * V] (a view, valid until the next step). */
  step(next: Int32Array): Float32Array {
    if (this.prompt) throw new Error('native decode: prefill() the prompt before the first step');
    this.tokens.set(next);
    return this.run(1);
  }

  /**
   * Makes the next calls compute only the first N rows (the caches keep every row's layout: rows
   * past N are left as they are). A continuous batch keeps its live rows first, so free rows cost nothing.
   */
  setActiveRows(n: number): void {
    if (!(Number.isInteger(n) && n >= 1 && n <= this.allocated))
      throw new Error(`native decode: active rows must be 1..${this.allocated}, got ${n}`);
    this.cfg[C.B] = n;
  }

  /** The next position a step writes (every row's). */
  get position(): number {
    return this.cfg[C.POS]!;
  }

  /** Positions this decoder has room for. */
  get capacity(): number {
    return this.cfg[C.MAXT]!;
  }

  /**
   * Makes row DST continue SRC's row SRCROW: its keys, values and key mask at SRC's positions (from
   * SRC's start to its position, which must be this decoder's), and nothing before them. Rotary
   * embeddings see only relative positions, so the row decodes on as SRC's would (continuous batching).
   */
  adoptRow(src: NativeDecoder, srcRow: number, dst: number): void {
    const pos = this.position;
    if (src.position !== pos || src.prompt || dst < 0 || dst >= this.allocated || srcRow >= src.allocated)
      throw new Error(
        `native decode: cannot adopt row ${srcRow} at position ${src.position} into row ${dst} at ${pos}`,
      );
    const maxT = this.capacity;
    const sT = src.capacity;
    const hd = this.cfg[C.HD]!;
    const KV = this.cfg[C.KV]!;
    // The source's first real position: its mask is zero before its start.
    let from = 0;
    const sm = src.state.subarray(srcRow * sT, srcRow * sT + pos);
    while (from < pos && sm[from] === 0) from++;
    this.state.fill(0, dst * maxT, (dst + 1) * maxT);
    this.state.set(sm.subarray(from), dst * maxT + from);
    for (let l = 0; l < this.cfg[C.L]!; l++)
      for (const which of [L.KC, L.VC]) {
        const d = this.off[O.LAYERS + l * L.N + which]! / 4;
        const s = src.off[O.LAYERS + l * L.N + which]! / 4;
        for (let j = 0; j < KV; j++) {
          const so = s + ((srcRow * KV + j) * sT + from) * hd;
          this.state.set(src.state.subarray(so, so + (pos - from) * hd), d + ((dst * KV + j) * maxT + from) * hd);
        }
      }
  }

  /** One native call over T new positions per row (tokens [B, T] at the head of this.tokens). */
  private run(T: number): Float32Array {
    const addon = nativeAddon()!;
    this.cfg[C.T] = T;
    const backend = tf.backend() as unknown as WasmBackendLike;
    const offsetOf = (t: tf.Tensor): number => {
      const o = backend.dataIdMap.get(t.dataId)?.memoryOffset;
      if (o == null) throw new Error('native decode: a weight is not in the wasm heap');
      return o;
    };
    // Weights are looked up on every step: an optimiser step replaces a variable's buffer. A weight
    // outside the heap goes in `ext` at its slot (the C step reads it there, in HF's [out, in] layout).
    const m = this.model;
    const ext = this.ext;
    const place = (slot: number, name: string) => {
      const w = m.external.get(name);
      ext[slot] = w?.data;
      this.off[slot] = w ? 0 : offsetOf(m.p(name));
    };
    place(O.EMBED, 'model.embed_tokens.weight');
    this.off[O.NORM] = offsetOf(m.p('model.norm.weight'));
    if (m.config.tieEmbeddings) {
      this.off[O.HEAD] = this.off[O.EMBED]!;
      ext[O.HEAD] = ext[O.EMBED];
    } else place(O.HEAD, 'lm_head.weight');
    this.off[O.COS] = offsetOf(m.rope.cos);
    this.off[O.SIN] = offsetOf(m.rope.sin);
    for (let l = 0; l < m.config.nLayers; l++) {
      LAYER_WEIGHTS.forEach((w, i) => {
        const name = `model.layers.${l}.${w}.weight`;
        if (w.endsWith('_proj')) place(O.LAYERS + l * L.N + i, name);
        else this.off[O.LAYERS + l * L.N + i] = offsetOf(m.p(name));
      });
    }
    if (m.config.attnBias)
      for (let l = 0; l < m.config.nLayers; l++)
        ['q', 'k', 'v'].forEach((w, i) => {
          this.off[O.LAYERS + m.config.nLayers * L.N + 3 * l + i] = offsetOf(
            m.p(`model.layers.${l}.self_attn.${w}_proj.bias`),
          );
        });
    const threads = this.stepThreads();
    const t0 = performance.now();
    const tokens =
      T * this.cfg[C.B]! === this.tokens.length ? this.tokens : this.tokens.subarray(0, T * this.cfg[C.B]!);
    const heapBuf = backend.wasm.HEAPU8.buffer as ArrayBuffer;
    if (m.external.size)
      addon.decode!(
        heapBuf,
        this.state.buffer as ArrayBuffer,
        tokens,
        this.cfg,
        this.off,
        m.config.rmsEps,
        threads,
        ext,
      );
    else addon.decode!(heapBuf, this.state.buffer as ArrayBuffer, tokens, this.cfg, this.off, m.config.rmsEps, threads);
    if (this.threads === 'auto' && T === 1) this.record(threads, performance.now() - t0);
    this.cfg[C.POS]! += T;
    const BV = this.cfg[C.B]! * this.cfg[C.V]!;
    return this.state.subarray(this.logitsAt, this.logitsAt + BV);
  }

  /** The thread count the last steps ran with ('auto': the current choice). */
  get currentThreads(): number {
    return this.threads === 'auto' ? this.probe.chosen : this.threads;
  }

  private stepThreads(): number {
    if (this.threads !== 'auto') return this.threads;
    const p = this.probe;
    const phase = p.steps % REPROBE;
    return phase < PROBE ? 1 + (phase % 2) : p.chosen;
  }

  private record(threads: number, ms: number): void {
    const p = this.probe;
    const phase = p.steps++ % REPROBE;
    if (phase >= PROBE) return;
    if (phase === 0) (p.ms = [0, 0]), (p.n = [0, 0]);
    p.ms[threads - 1]! += ms;
    p.n[threads - 1]!++;
    // The first step of each probe warms caches / wakes BLAS workers for both counts alike.
    if (phase === PROBE - 1) p.chosen = p.ms[1]! / p.n[1]! < p.ms[0]! / p.n[0]! ? 2 : 1;
  }
}
