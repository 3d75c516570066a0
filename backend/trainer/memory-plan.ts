// Micro-batch sizing against the wasm heap. The wasm engine has one 4 GiB heap for weights,
// optimiser state and a step's activations; a batch whose activations do not fit aborts the process
// (`memory access out of bounds`) with nothing to tell the user why. The trainer estimates a row's
// activation bytes from the model's shape and the batch's sequence length, and picks the largest
// micro-batch that fits the heap left after what is already allocated; `trainer.micro_batch_size`
// in the config still wins. Figures behind the estimate: docs/performance.md (`npm run bench -- vocab-memory`).
import { tf } from '../model/engine.js';
import { headDim, type ModelConfig } from '../model/config.js';
import { HEAD_CHUNK_BYTES, headChunkRows } from '../model/logprobs.js';

/** The wasm heap's hard limit (32-bit addressing); RFT_HEAP_LIMIT_MIB lowers it (tests, or a smaller budget). */
export function heapLimitBytes(): number {
  const env = process.env.RFT_HEAP_LIMIT_MIB;
  if (env !== undefined && env !== '' && Number(env) > 0) return Number(env) * 2 ** 20;
  // Other engines keep tensors in ordinary memory: no heap to size against.
  return tf.getBackend() === 'wasm' ? 2 ** 32 : Infinity;
}

/**
 * Bytes of activations one row of `seqLen` tokens keeps alive through a training step (forward
 * tensors saved for the backward pass, plus the backward pass's own at its peak). Counted per token
 * and layer in floats: the norms' inputs and outputs and the residual (about 6 D), q / k / v with
 * biases and rotary intermediates (3 (H + 2 KV) hd), the attention output and o_proj's input
 * (2 H hd), gate / up / SwiGLU / down's input (4 F), the attention probabilities (H T), and the
 * head: the hidden row (chunked) or 5 V (logits, their scaled and sliced copies, log-softmax and its
 * gradient, unchunked). Doubled for the backward pass's gradients and the allocator's slack; the
 * vocab-memory bench checks it against measured peaks.
 */
export function activationBytesPerRow(
  c: ModelConfig,
  seqLen: number,
  chunkedHead = headChunkRows(c.vocabSize) > 0,
): number {
  const hd = headDim(c);
  const perLayer =
    6 * c.dModel + 3 * (c.nHeads + 2 * c.nKvHeads) * hd + 2 * c.nHeads * hd + 4 * c.dFF + c.nHeads * seqLen;
  const head = chunkedHead ? 2 * c.dModel : 5 * c.vocabSize;
  return 2 * 4 * seqLen * (c.nLayers * perLayer + head + 2 * c.dModel);
}

export interface MicroBatchPlan {
  /** Rows per micro-batch (1..batch). */
  micro: number;
  batch: number;
  seqLen: number;
  perRowBytes: number;
  /** Heap bytes the step may use: the limit less what is allocated and the fixed costs, with a margin. */
  budgetBytes: number;
  limitBytes: number;
  usedBytes: number;
  /** Set when even one row does not fit: the message names the numbers and the config fields. */
  refusal?: string;
}

/**
 * Share of the free heap the activations may take. The wasm heap grows past the live tensors: in
 * the vocab-memory bench at V = 151,669 it reached 1.3x the live peak with the in-place head, and
 * 2.1-2.3x when each head chunk allocated its own [rows, V] blocks (fragmentation; AdamW's fresh
 * [V, D] buffers still add some), and the estimate below is rough; half leaves that margin.
 */
export const HEAP_SHARE = 0.5;
/**
 * Copies of the trainable parameters a step holds beside the activations: the accumulated gradient,
 * the tied table's two gradient parts and their sum, the clipped copy, AdamW's fresh buffers.
 */
export const TRAINABLE_COPIES = 4;

const MiB = (b: number) => `${Math.round(b / 2 ** 20).toLocaleString('en-US')} MiB`;

/**
 * The largest micro-batch of `batch` rows of `seqLen` tokens whose activations fit the heap.
 * `trainableBytes`: the parameters that get gradients (TRAINABLE_COPIES of them are held); the
 * chunked head's per-chunk arrays are a fixed cost.
 */
export function planMicroBatch(
  c: ModelConfig,
  o: { batch: number; seqLen: number; trainableBytes: number; usedBytes?: number; limitBytes?: number },
): MicroBatchPlan {
  const limit = o.limitBytes ?? heapLimitBytes();
  const used = o.usedBytes ?? tf.memory().numBytes;
  const perRow = activationBytesPerRow(c, o.seqLen);
  const chunk = headChunkRows(c.vocabSize) > 0 ? 5 * HEAD_CHUNK_BYTES : 0;
  const budget = Number.isFinite(limit)
    ? HEAP_SHARE * (limit - used - TRAINABLE_COPIES * o.trainableBytes - chunk)
    : Infinity;
  const fit = Number.isFinite(budget) ? Math.floor(budget / perRow) : o.batch;
  const plan: MicroBatchPlan = {
    micro: Math.max(1, Math.min(o.batch, fit)),
    batch: o.batch,
    seqLen: o.seqLen,
    perRowBytes: perRow,
    budgetBytes: budget,
    limitBytes: limit,
    usedBytes: used,
  };
  if (fit < 1) {
    plan.refusal =
      `one row of ${o.seqLen} tokens needs about ${MiB(perRow)} of activations (vocabulary ${c.vocabSize.toLocaleString('en-US')}, ` +
      `hidden size ${c.dModel}, ${c.nLayers} layers), and the ${MiB(limit)} wasm heap has ${MiB(Math.max(0, budget))} left for them ` +
      `(${MiB(used)} already holds the weights and optimiser state): even trainer.micro_batch_size 1 cannot fit. Shorten the sequences ` +
      `(explorer.sampling.max_new_tokens, the prompts), train a smaller model (model.checkpoint / model.size), or use model.lora ` +
      `(its frozen base lives outside the heap)`;
  }
  return plan;
}

/** The log line for a chosen micro-batch. */
export function describePlan(c: ModelConfig, p: MicroBatchPlan): string {
  // Engines other than wasm (webgpu, cpu) have no heap of their own to plan against: say so, not "∞ MiB".
  const room = Number.isFinite(p.limitBytes)
    ? `${MiB(Math.max(0, p.budgetBytes))} of the ${MiB(p.limitBytes)} heap free for them`
    : 'no wasm heap bounds them on this engine';
  return (
    `micro-batch ${p.micro} of ${p.batch} rows (sequences of ${p.seqLen} tokens, vocabulary ${c.vocabSize.toLocaleString('en-US')}, ` +
    `hidden size ${c.dModel}, ${c.nLayers} layers: about ${MiB(p.perRowBytes)} of activations a row, ${room}); ` +
    'trainer.micro_batch_size in the config sets it'
  );
}
