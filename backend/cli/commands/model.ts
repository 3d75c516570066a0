// `rft model info|score|generate|export`: look at, score with, sample from and export a model folder
// (this project's checkpoint or a Hugging Face model folder / HF-cache entry).
import { InputError } from '../../core/errors.js';
import { command, type ParsedArgs } from '../command.js';
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
  args: Pick<ParsedArgs, 'positional' | 'usage'>,
  chatTemplate: string | undefined,
  fn: (m: ModelFolder) => Promise<void>,
): Promise<number> {
  const arg = args.positional[0];
  if (!arg) throw new InputError(`a model folder is required\nusage: ${args.usage}`);
  await initEngine({ modelParams: checkpointParams(arg) });
  const dir = resolveModelDir(arg);
  const ck = loadCheckpoint(dir, { external: inferenceOutsideHeap(), chatTemplate });
  const note = outsideHeapNote(ck.model);
  if (note) log.info(`${dir}: ${note}`);
  try {
    await fn({ dir, ck, tokenizer: () => requireTokenizer(ck) });
  } finally {
    ck.model.dispose();
  }
  return 0;
}

/** One of the model's named templates, or a .jinja file (as model.chat_template). */
const CHAT_TEMPLATE = {
  type: 'string',
  value: 'NAME|FILE',
  description: "one of the model's named chat templates, or a .jinja file",
} as const;

export const modelInfoCommand = command({
  name: 'model info',
  args: 'DIR',
  summary: 'architecture, parameters, dtype, tokenizer and chat template of a model folder',
  flags: { 'chat-template': CHAT_TEMPLATE },
  async run(args) {
    return openModelFolder(args, args.flags['chat-template'], async ({ dir: resolved, ck }) => {
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

export const modelScoreCommand = command({
  name: 'model score',
  args: 'DIR',
  summary: 'per-token log-probs of TEXT (no chat template); last line {"ids": [...], "logprobs": [...]}',
  flags: { text: { type: 'string', value: 'TEXT', required: true, description: 'the text scored' } },
  async run(args) {
    const text = args.flags.text;
    return openModelFolder(args, undefined, async ({ ck, tokenizer }) => {
      const ids = scoreIdsOf(tokenizer(), text);
      if (ids.length > ck.model.config.maxSeqLen)
        throw new InputError(`--text is ${ids.length} tokens, more than the model's ${ck.model.config.maxSeqLen}`);
      const logprobs = await scoreIds(ck.model, ids);
      console.log(JSON.stringify({ ids, logprobs }));
    });
  },
});

export const modelGenerateCommand = command({
  name: 'model generate',
  args: 'DIR',
  summary: "sample a reply to --prompt with the model's chat template",
  flags: {
    prompt: { type: 'string', value: 'TEXT', required: true, description: 'the user message' },
    system: { type: 'string', value: 'TEXT', description: 'a system message' },
    'max-new-tokens': { type: 'number', default: 64, description: 'the longest reply' },
    temperature: { type: 'number', value: 'T', default: 0, description: 'sampling temperature (0: greedy)' },
    seed: { type: 'number', value: 'S', default: 0, description: 'the sampling seed' },
    'chat-template': CHAT_TEMPLATE,
  },
  async run(args) {
    const { flags } = args;
    return openModelFolder(args, flags['chat-template'], async ({ ck, tokenizer }) => {
      const tok = tokenizer();
      const ids = encodePrompt(tok, taskMessages(flags.prompt, flags.system));
      const [g] = await generate(ck.model, tok, [ids], {
        maxNewTokens: flags['max-new-tokens'],
        temperature: flags.temperature,
        seed: flags.seed,
        stopTokens: stopTokens(tok),
      });
      console.log(
        JSON.stringify({ prompt_tokens: ids.length, tokens: g!.tokens, text: g!.text, finish_reason: g!.finishReason }),
      );
    });
  },
});

export const modelExportCommand = command({
  name: 'model export',
  args: 'CHECKPOINT',
  summary:
    'write a checkpoint as a Hugging Face folder (hf, LoRA merged), its LoRA adapters in PEFT layout (peft) or a GGUF file for llama.cpp (gguf, LoRA merged); a non-empty DIR is refused unless --force, which replaces only the files the export writes',
  flags: {
    format: {
      type: 'string',
      choices: ['hf', 'peft', 'gguf'],
      required: true,
      description: 'a Hugging Face folder, PEFT adapters or a GGUF file',
    },
    out: { type: 'string', value: 'DIR', required: true, description: 'the folder written' },
    dtype: {
      type: 'string',
      choices: ['f32', 'f16'],
      default: 'f32',
      description: 'the weights type (f16: gguf only)',
    },
    'chat-template': CHAT_TEMPLATE,
    force: {
      type: 'boolean',
      description: 'write into a non-empty DIR (only the files the export writes are replaced)',
    },
  },
  async run(args) {
    const { format, out, dtype, force } = args.flags;
    if (format !== 'gguf' && dtype !== 'f32')
      throw new InputError(`--dtype f16 applies to gguf only (${format} exports float32)`);
    // Refused before the model is loaded (a big one takes a while); checked again before placing.
    if (args.positional[0]) checkExportTarget(out, { format, force, source: args.positional[0] });
    return openModelFolder(args, args.flags['chat-template'], async ({ dir, ck, tokenizer }) => {
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
