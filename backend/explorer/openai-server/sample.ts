// How a request's choices are sampled: in the server's shared continuous batch (batcher.ts) when
// the policy's weights decode natively in this process, token by token with a watcher (streaming,
// disconnects); otherwise alone, through the rollout model's own generate (the whole reply at once).
import { Rng } from '../../core/rng.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import type { Transformer } from '../../model/transformer.js';
import type { RolloutModel } from '../workflow.js';
import type { BatchSeq, TopToken } from './batch-group.js';
import type { DecodeBatcher } from './batcher.js';
import type { ChatRequest } from './request.js';

/** A choice as sampled, before the reply is read (stop strings cut, tool calls parsed). */
export interface RawChoice {
  tokens: number[];
  logprobs: number[];
  /** The top tokens at each position, when the batch computed them from its logits. */
  top?: TopToken[][];
  finishReason: 'stop' | 'length' | 'cancelled' | 'error';
  infraError?: string;
}

/** What a caller watches while a request samples (routes.ts streams with it). */
export interface SampleWatch {
  /** The completion's id (a stream names it in its chunks before the completion exists). */
  id?: string;
  /** Once the request passed its checks, before its first token: the tokenizer and the version answering. */
  onStart?(tok: Tokenizer, version: number): void;
  /** After each sampled token of choice I (its tokens so far: C). */
  onToken?(i: number, c: RawChoice): void;
  /** True once the client went away: its rows leave the batch. */
  cancelled?(): boolean;
}

export interface SampleSpec {
  prompt: number[];
  maxNew: number;
  seed: number;
  stopTokens: number[];
}

/** The request's `n` choices decoded in the shared batch, each with its own random stream. */
export async function sampleBatched(
  batcher: DecodeBatcher,
  model: Transformer,
  tok: Tokenizer,
  req: ChatRequest,
  spec: SampleSpec,
  watch: SampleWatch = {},
): Promise<RawChoice[]> {
  const root = new Rng(spec.seed);
  const stops = new Set(spec.stopTokens);
  const seqs = Array.from({ length: req.n }, (_, i): BatchSeq => {
    const s: BatchSeq = {
      model,
      tokenizer: tok,
      prompt: spec.prompt,
      maxNew: spec.maxNew,
      params: { temperature: req.temperature, topK: 0, topP: req.topP },
      rng: root.fork(i),
      stopTokens: stops,
      stopStrings: req.stop,
      topLogprobs: req.topLogprobs,
      cancelled: () => watch.cancelled?.() ?? false,
      onToken: watch.onToken && (() => watch.onToken!(i, view(s))),
      settle: () => {},
      tokens: [],
      logprobs: [],
      top: [],
    };
    return s;
  });
  await batcher.run(seqs);
  return seqs.map(view);
}

function view(s: BatchSeq): RawChoice {
  return {
    tokens: s.tokens,
    logprobs: s.logprobs,
    top: s.topLogprobs > 0 ? s.top : undefined,
    finishReason: s.finishReason ?? 'length',
  };
}

/** The choices from the rollout model's generate, all at once (engines without the shared batch). */
export async function sampleAlone(model: RolloutModel, req: ChatRequest, spec: SampleSpec): Promise<RawChoice[]> {
  const gens = await model.generate(
    Array.from({ length: req.n }, () => spec.prompt),
    {
      maxNewTokens: spec.maxNew,
      temperature: req.temperature,
      topP: req.topP,
      stopTokens: spec.stopTokens,
      stopStrings: req.stop.length ? req.stop : undefined,
      seed: spec.seed,
    },
  );
  return gens.map((g) => ({
    tokens: g.tokens,
    logprobs: g.logprobs,
    finishReason: g.finishReason === 'error' ? 'error' : g.finishReason === 'stop' ? 'stop' : 'length',
    infraError: g.infraError,
  }));
}
