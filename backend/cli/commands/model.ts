// `rft model info|score|generate|export`: look at, score with, sample from and export a model folder
// (this project's checkpoint or a Hugging Face model folder / HF-cache entry).
import { InputError } from '../../core/errors.js';
import { command, flagNumber, flagString, type ParsedArgs } from '../command.js';
import { initEngine } from '../../model/engine.js';
import { checkpointParams } from '../../model/run-model.js';
import { baseModelOf, loadCheckpoint, type LoadedCheckpoint } from '../../model/checkpoint.js';
import { inferenceOutsideHeap, outsideHeapNote } from '../../model/external-weights.js';
import { logger } from '../../core/log.js';
import { countParams, headDim } from '../../model/config.js';
import { architectureOf } from '../../model/hf/config.js';
import { resolveModelDir, indexWeights } from '../../model/hf/folder.js';
import type { HfTokenizer } from '../../model/hf/tokenizer.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import { scoreIds, scoreIdsOf } from '../../model/score.js';
import { encodePrompt, stopTokens, taskMessages } from '../../model/chat.js';
import { generate } from '../../model/generate.js';
import { exportGgufFolder } from '../../model/export/gguf.js';
import { exportHf } from '../../model/export/hf.js';
import { exportPeft } from '../../model/export/peft.js';
import { checkExportTarget } from '../../model/export/target.js';

function requireTokenizer(ck: LoadedCheckpoint): Tokenizer {
  if (!ck.tokenizer) throw new InputError(`${ck.dir}: the model folder has no tokenizer.json`);
  return ck.tokenizer;
}

interface ModelFolder {
  /** The folder the weights are read from (an HF-cache entry resolved to its snapshot). */
  dir: string;
  ck: LoadedCheckpoint;
  /** The folder's tokenizer; an error naming the folder when it has none. */
  tokenizer(): Tokenizer;
}

const log = logger('model');

/**
 * The block every model command shares: the DIR argument, the engine, the folder loaded; the model is
 * freed after `fn`. Nothing here trains, so the weights load outside the wasm heap when the addon
 * allows (a 1B model's f32 weights do not fit the heap; RFT_EXTERNAL_WEIGHTS=0 keeps them in it).
 */
async function openModelFolder(
  args: ParsedArgs,
  usage: string,
  fn: (m: ModelFolder) => Promise<void>,
): Promise<number> {
  const arg = args.positional[0];
  if (!arg) throw new InputError(`a model folder is required\nusage: rft ${usage}`);
  await initEngine({ modelParams: checkpointParams(arg) });
  const dir = resolveModelDir(arg);
  // --chat-template NAME|FILE: one of the model's named templates, or a .jinja file (as model.chat_template).
  const ck = loadCheckpoint(dir, { external: inferenceOutsideHeap(), chatTemplate: flagString(args, 'chat-template') });
  const note = outsideHeapNote(ck.model);
  if (note) log.info(`${dir}: ${note}`);
  try {
    await fn({ dir, ck, tokenizer: () => requireTokenizer(ck) });
  } finally {
    ck.model.dispose();
  }
  return 0;
}

const INFO = 'model info DIR [--chat-template NAME|FILE]';
command({
  name: 'model info',
  usage: INFO,
  summary: 'architecture, parameters, dtype, tokenizer and chat template of a model folder',
  flags: ['chat-template'],
  async run(args) {
    return openModelFolder(args, INFO, async ({ dir: resolved, ck }) => {
      const { entries } = indexWeights(resolved);
      const dtypes = [...new Set([...entries.values()].map((e) => e.dtype))];
      const c = ck.model.config;
      const tok = ck.tokenizer;
      const hf = tok?.kind === 'hf' ? (tok as HfTokenizer) : undefined;
      const arch = Array.isArray(c.hfConfig?.architectures)
        ? (c.hfConfig!.architectures as string[])[0]
        : architectureOf(c);
      console.log(
        JSON.stringify({
          dir: resolved,
          architecture: arch,
          parameters: countParams(c),
          dtype: dtypes.join(','),
          layers: c.nLayers,
          hidden: c.dModel,
          heads: c.nHeads,
          kvHeads: c.nKvHeads,
          headDim: headDim(c),
          intermediate: c.dFF,
          vocab: c.vocabSize,
          tiedEmbeddings: c.tieEmbeddings,
          maxSeqLen: c.maxSeqLen,
          ropeTheta: c.ropeTheta,
          ropeScaling: c.ropeScaling ?? null,
          tokenizer: tok
            ? {
                kind: tok.kind,
                vocab: tok.vocabSize,
                bos: tok.bosId,
                eos: tok.eosId,
                pad: tok.padId,
                stop: hf?.stopIds,
              }
            : null,
          chatTemplate: hf ? (hf.chatTemplate ?? null) : tok ? 'rft' : null,
          chatTemplateSource: hf?.templateSource ?? null,
          lora: ck.model.lora
            ? { ...ck.model.lora, adapterParameters: ck.model.variables().reduce((a, v) => a + v.size, 0) }
            : null,
          version: ck.meta.version,
        }),
      );
    });
  },
});

const SCORE = 'model score DIR --text TEXT';
command({
  name: 'model score',
  usage: SCORE,
  summary: 'per-token log-probs of TEXT (no chat template); last line {"ids": [...], "logprobs": [...]}',
  flags: ['text'],
  async run(args) {
    const text = flagString(args, 'text');
    if (text === undefined) throw new InputError(`--text is required\nusage: rft ${SCORE}`);
    return openModelFolder(args, SCORE, async ({ ck, tokenizer }) => {
      const ids = scoreIdsOf(tokenizer(), text);
      if (ids.length > ck.model.config.maxSeqLen)
        throw new InputError(`--text is ${ids.length} tokens, more than the model's ${ck.model.config.maxSeqLen}`);
      const logprobs = await scoreIds(ck.model, ids);
      console.log(JSON.stringify({ ids, logprobs }));
    });
  },
});

const GENERATE =
  'model generate DIR --prompt TEXT [--max-new-tokens N] [--temperature T] [--seed S] [--system TEXT] [--chat-template NAME|FILE]';
command({
  name: 'model generate',
  usage: GENERATE,
  summary: "sample a reply to --prompt with the model's chat template",
  flags: ['prompt', 'max-new-tokens', 'temperature', 'seed', 'system', 'chat-template'],
  async run(args) {
    const prompt = flagString(args, 'prompt');
    if (prompt === undefined) throw new InputError(`--prompt is required\nusage: rft ${GENERATE}`);
    return openModelFolder(args, GENERATE, async ({ ck, tokenizer }) => {
      const tok = tokenizer();
      const ids = encodePrompt(tok, taskMessages(prompt, flagString(args, 'system')));
      const [g] = await generate(ck.model, tok, [ids], {
        maxNewTokens: flagNumber(args, 'max-new-tokens', 64),
        temperature: flagNumber(args, 'temperature', 0),
        seed: flagNumber(args, 'seed', 0),
        stopTokens: stopTokens(tok),
      });
      console.log(
        JSON.stringify({ prompt_tokens: ids.length, tokens: g!.tokens, text: g!.text, finish_reason: g!.finishReason }),
      );
    });
  },
});

const EXPORT =
  'model export CHECKPOINT --format hf|peft|gguf --out DIR [--dtype f32|f16] [--chat-template NAME|FILE] [--force]';
command({
  name: 'model export',
  usage: EXPORT,
  summary:
    'write a checkpoint as a Hugging Face folder (hf, LoRA merged), its LoRA adapters in PEFT layout (peft) or a GGUF file for llama.cpp (gguf, LoRA merged); a non-empty DIR is refused unless --force, which replaces only the files the export writes',
  flags: ['format', 'out', 'dtype', 'chat-template'],
  booleanFlags: ['force'],
  async run(args) {
    const format = flagString(args, 'format');
    const out = flagString(args, 'out');
    if (!format || !out) throw new InputError(`--format and --out are required\nusage: rft ${EXPORT}`);
    if (format !== 'hf' && format !== 'gguf' && format !== 'peft')
      throw new InputError(`--format must be hf, peft or gguf, got '${format}'`);
    const dtype = flagString(args, 'dtype') ?? 'f32';
    if (dtype !== 'f32' && dtype !== 'f16') throw new InputError(`--dtype must be f32 or f16, got '${dtype}'`);
    if (format !== 'gguf' && dtype !== 'f32')
      throw new InputError(`--dtype f16 applies to gguf only (${format} exports float32)`);
    const force = args.flags.force === true;
    // Refused before the model is loaded (a big one takes a while); checked again before placing.
    if (args.positional[0]) checkExportTarget(out, { format, force, source: args.positional[0] });
    return openModelFolder(args, EXPORT, async ({ dir, ck, tokenizer }) => {
      const target = { force, source: dir };
      let written: string;
      if (format === 'hf') written = await exportHf(ck.model, ck.tokenizer, out, target);
      else if (format === 'peft')
        written = await exportPeft(ck.model, out, baseModelOf(ck.meta, ck.model.config, ck.dir), target);
      else written = await exportGgufFolder(ck.model, tokenizer(), out, { dtype, name: ck.dir }, target);
      console.log(JSON.stringify({ format, out: written, dtype }));
    });
  },
});
