// tokenizer.json on disk: save (plus a tokenizer_config.json naming the special tokens, for
// Hugging Face readers) and load with errors that name the file.
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../core/errors.js';
import type { BpeTokenizer } from './bpe.js';
import type { CharTokenizer } from './char.js';
import { tokenizerFromJSON } from './from-json.js';
import { SPECIAL_TOKENS, type Tokenizer } from './types.js';
import { HfTokenizer } from '../hf/tokenizer.js';
import { resolveModelDir } from '../hf/folder.js';

export const TOKENIZER_FILE = 'tokenizer.json';
export const TOKENIZER_CONFIG_FILE = 'tokenizer_config.json';

/**
 * True when DIR's tokenizer is an imported Hugging Face one (run by @huggingface/tokenizers) rather
 * than this project's own: its tokenizer_config.json does not carry the project's rft_tokenizer_kind.
 */
export function isHfTokenizerDir(dir: string): boolean {
  const cfg = join(dir, TOKENIZER_CONFIG_FILE);
  if (!existsSync(join(dir, TOKENIZER_FILE)) || !existsSync(cfg)) return false;
  try {
    return (JSON.parse(readFileSync(cfg, 'utf8')) as Record<string, unknown>).rft_tokenizer_kind === undefined;
  } catch {
    return true; // HfTokenizer.fromDir reports the bad file by name
  }
}

/**
 * Reads `DIR/tokenizer.json`, or the file itself when given a file: this project's own tokenizers, or
 * an imported Hugging Face model's (its tokenizer.json + tokenizer_config.json, also in an HF-cache entry).
 */
export function loadTokenizer(dirOrFile: string): Tokenizer {
  if (!existsSync(dirOrFile)) throw new InputError(`no such file or directory`, { file: dirOrFile });
  if (statSync(dirOrFile).isDirectory()) {
    const dir = resolveModelDir(dirOrFile);
    if (isHfTokenizerDir(dir)) return HfTokenizer.fromDir(dir);
    dirOrFile = dir;
  }
  return loadOwnTokenizer(dirOrFile);
}

/** This project's tokenizer.json (char or BPE). */
export function loadOwnTokenizer(dirOrFile: string): CharTokenizer | BpeTokenizer {
  if (!existsSync(dirOrFile)) throw new InputError(`no such file or directory`, { file: dirOrFile });
  const file = statSync(dirOrFile).isDirectory() ? join(dirOrFile, TOKENIZER_FILE) : dirOrFile;
  if (!existsSync(file)) throw new InputError(`no ${TOKENIZER_FILE} here`, { file });
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InputError(`not valid JSON: ${e instanceof Error ? e.message : String(e)}`, { file });
  }
  return tokenizerFromJSON(json, file);
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
    if (files.generationConfig) writeAtomic(join(dir, 'generation_config.json'), JSON.stringify(files.generationConfig, null, 2) + '\n');
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
