// `rft tokenizer train|encode|decode`: train a char or byte-level BPE tokenizer on taskset files and
// save it as DIR/tokenizer.json; encode text to ids (a JSON array on stdout); decode ids to text.
import { InputError } from '../../core/errors.js';
import { readFileSync } from 'node:fs';
import { command } from '../command.js';
import {
  loadTokenizer,
  readCorpusFile,
  saveTokenizer,
  trainTokenizer,
  DEFAULT_BPE_VOCAB,
  type TokenizerKind,
} from '../../model/tokenizer/index.js';

const TOKENIZER = {
  type: 'string',
  value: 'DIR|DIR/tokenizer.json',
  required: true,
  description: 'the tokenizer (a folder holding tokenizer.json, or the file)',
} as const;

export const tokenizerTrainCommand = command({
  name: 'tokenizer train',
  args: 'FILE...',
  summary: 'train a tokenizer (bpe or char) on taskset / text files; writes DIR/tokenizer.json',
  flags: {
    out: { type: 'string', value: 'DIR', required: true, description: 'the folder tokenizer.json is written to' },
    kind: {
      type: 'string',
      choices: ['bpe', 'char'],
      default: 'bpe',
      description: 'byte-level BPE or one token per character',
    },
    'vocab-size': { type: 'number', description: `the vocabulary size (bpe: ${DEFAULT_BPE_VOCAB} if not given)` },
    'min-frequency': { type: 'number', description: 'the fewest occurrences of a pair merged' },
  },
  run({ positional, flags, usage }) {
    const kind: TokenizerKind = flags.kind;
    if (positional.length === 0) throw new InputError(`no input files\nusage: ${usage}`);
    const vocabSize = flags['vocab-size'] ?? (kind === 'bpe' ? DEFAULT_BPE_VOCAB : undefined);
    const texts: string[] = [];
    let problems = 0;
    for (const file of positional) {
      const r = readCorpusFile(file);
      for (const p of r.problems) console.error(`warning: ${p.message} (line skipped)`);
      problems += r.problems.length;
      texts.push(...r.texts);
    }
    const chars = texts.reduce((n, t) => n + t.length, 0);
    if (chars === 0) throw new InputError(`no training text found in ${positional.join(', ')}`);
    const tok = trainTokenizer(kind, texts, { vocabSize, minFrequency: flags['min-frequency'] });
    const file = saveTokenizer(tok, flags.out);
    console.log(
      JSON.stringify({ file, kind, vocabSize: tok.vocabSize, texts: texts.length, chars, skippedLines: problems }),
    );
    return 0;
  },
});

export const tokenizerEncodeCommand = command({
  name: 'tokenizer encode',
  args: 'TEXT',
  summary: 'print the token ids of TEXT (or of stdin) as a JSON array',
  flags: {
    tokenizer: TOKENIZER,
    'allow-special': { type: 'boolean', description: 'special tokens written in TEXT are encoded as such' },
  },
  run({ positional, flags, usage }) {
    const tok = loadTokenizer(flags.tokenizer);
    if (positional.length > 1)
      throw new InputError(`expected one TEXT argument (quote it), got ${positional.length}\nusage: ${usage}`);
    const text = positional.length === 1 ? positional[0]! : readFileSync(0, 'utf8');
    console.log(JSON.stringify(tok.encode(text, { allowSpecial: flags['allow-special'] })));
    return 0;
  },
});

export const tokenizerDecodeCommand = command({
  name: 'tokenizer decode',
  args: 'IDS_JSON',
  summary: 'print the text of a JSON array of token ids (or of stdin)',
  flags: {
    tokenizer: TOKENIZER,
    'skip-special': { type: 'boolean', description: 'leave special tokens out of the text' },
  },
  run({ positional, flags, usage }) {
    const tok = loadTokenizer(flags.tokenizer);
    const raw = positional.length === 1 ? positional[0]! : readFileSync(0, 'utf8');
    let ids: unknown;
    try {
      ids = JSON.parse(raw);
    } catch {
      throw new InputError(`IDS_JSON must be a JSON array of token ids\nusage: ${usage}`);
    }
    if (!Array.isArray(ids) || !ids.every((x) => Number.isInteger(x)))
      throw new InputError(`IDS_JSON must be a JSON array of integers\nusage: ${usage}`);
    process.stdout.write(tok.decode(ids as number[], { skipSpecial: flags['skip-special'] }));
    return 0;
  },
});
