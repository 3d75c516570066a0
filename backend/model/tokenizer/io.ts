// tokenizer.json on disk: save (plus a tokenizer_config.json naming the special tokens, for
// Hugging Face readers) and load with errors that name the file.
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { InputError } from '../../core/errors.js';
import { tokenizerFromJSON } from './from-json.js';
import { SPECIAL_TOKENS, type Tokenizer } from './types.js';
import { HfTokenizer, type HfTokenizerOptions } from '../hf/tokenizer.js';
import { resolveModelDir } from '../hf/folder.js';
import { readRegularFile } from '../../core/regular-file.js';

export const TOKENIZER_FILE = 'tokenizer.json';
export const TOKENIZER_CONFIG_FILE = 'tokenizer_config.json';

/**
 * The one way to load a tokenizer (runs, workers, checkpoints, the server's curation and token view,
 * `rft tokenizer`, eval, reward models, exports): DIR or DIR/tokenizer.json (or an HF-cache
 * `models--org--name` entry) give the same tokenizer. A Hugging Face tokenizer.json is run by
 * @huggingface/tokenizers with the files beside it (tokenizer_config.json, generation_config.json,
 * chat templates); this project's own (char / BPE) by its own loader. `chatTemplate` picks a named
 * template or a .jinja file for an HF tokenizer (`model.chat_template`).
 */
export function loadTokenizer(dirOrFile: string, opts: HfTokenizerOptions = {}): Tokenizer {
  if (!existsSync(dirOrFile)) throw new InputError(`no such file or directory`, { file: dirOrFile });
  let dir: string;
  let file: string;
  if (statSync(dirOrFile).isDirectory()) {
    dir = resolveModelDir(dirOrFile);
    file = join(dir, TOKENIZER_FILE);
    if (!existsSync(file)) throw new InputError(`no ${TOKENIZER_FILE} here`, { file });
  } else {
    file = dirOrFile;
    dir = dirname(file);
  }
  // The files beside a tokenizer.json belong to it; beside another name they may not.
  const siblings = basename(file) === TOKENIZER_FILE;
  const json = readTokenizerJson(file);
  if (isOwnTokenizer(json, siblings ? dir : undefined)) {
    if (opts.chatTemplate !== undefined)
      throw new InputError(
        `a chat template is only for a Hugging Face model's tokenizer; this is the project's own (its chat layout is fixed)`,
        { file, field: 'chat_template' },
      );
    return tokenizerFromJSON(json, file);
  }
  return siblings
    ? HfTokenizer.fromDir(dir, opts)
    : new HfTokenizer({ tokenizer: json as Record<string, unknown>, tokenizerConfig: {} }, dir);
}

/**
 * This project's own tokenizer: the tokenizer_config.json that saving writes beside it names its
 * kind (`rft_tokenizer_kind`); one without that file is ours when it has any of the project's
 * special tokens (a bare tokenizer.json written from toJSON(); its own loader then names whatever
 * else is wrong with it). Anything else is a Hugging Face one.
 */
function isOwnTokenizer(json: unknown, dir: string | undefined): boolean {
  const cfg = dir && join(dir, TOKENIZER_CONFIG_FILE);
  if (cfg && existsSync(cfg)) {
    try {
      return (JSON.parse(readFileSync(cfg, 'utf8')) as Record<string, unknown>).rft_tokenizer_kind !== undefined;
    } catch {
      return false; // HfTokenizer.fromDir reports the bad file by name
    }
  }
  const added = (json as { added_tokens?: unknown }).added_tokens;
  if (!Array.isArray(added)) return false;
  const names = new Set(added.map((a) => (a as { content?: unknown }).content));
  return Object.values(SPECIAL_TOKENS).some((t) => names.has(t));
}

function readTokenizerJson(file: string): unknown {
  let json: unknown;
  try {
    json = JSON.parse(readRegularFile(file, 'utf8'));
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`not valid JSON: ${e instanceof Error ? e.message : String(e)}`, { file });
  }
  if (!json || typeof json !== 'object' || Array.isArray(json))
    throw new InputError('expected a tokenizer.json object', { file });
  return json;
}

/** tokenizer_config.json for Hugging Face readers (transformers, tokenizers.js). */
export function tokenizerConfig(tok: Tokenizer): Record<string, unknown> {
  const { pad, bos, eos, ...roles } = SPECIAL_TOKENS;
  return {
    tokenizer_class: 'PreTrainedTokenizerFast',
    bos_token: bos,
    eos_token: eos,
    pad_token: pad,
    additional_special_tokens: Object.values(roles),
    // Decoding must give back the exact text, so no space clean-up.
    clean_up_tokenization_spaces: false,
    rft_tokenizer_kind: tok.kind,
  };
}

/** Writes DIR/tokenizer.json and DIR/tokenizer_config.json (each via a temporary file and a rename). */
export function saveTokenizer(tok: Tokenizer, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, TOKENIZER_FILE);
  if (tok.kind === 'hf') {
    // An imported model's tokenizer files are written back as they were read.
    const { files } = tok as HfTokenizer;
    writeAtomic(file, JSON.stringify(files.tokenizer));
    writeAtomic(join(dir, TOKENIZER_CONFIG_FILE), JSON.stringify(files.tokenizerConfig, null, 2) + '\n');
    if (files.generationConfig)
      writeAtomic(join(dir, 'generation_config.json'), JSON.stringify(files.generationConfig, null, 2) + '\n');
    // chat_template.jinja (and named ones): transformers >= 4.43 keeps the template there, not in tokenizer_config.json.
    for (const [rel, text] of Object.entries(files.templates ?? {})) {
      mkdirSync(dirname(join(dir, rel)), { recursive: true });
      writeAtomic(join(dir, rel), text);
    }
    return file;
  }
  writeAtomic(file, JSON.stringify(tok.toJSON()));
  writeAtomic(join(dir, TOKENIZER_CONFIG_FILE), JSON.stringify(tokenizerConfig(tok), null, 2) + '\n');
  return file;
}

function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}
