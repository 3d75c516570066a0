// `rft tokenizer train|encode|decode`: train a char or byte-level BPE tokenizer on taskset files and
// save it as DIR/tokenizer.json; encode text to ids (a JSON array on stdout); decode ids to text.
import { InputError } from '../../core/errors.js';
import { readFileSync } from 'node:fs';
import { command, flagNumber, flagString, type ParsedArgs } from '../command.js';
import {
  loadTokenizer,
  readCorpusFile,
  saveTokenizer,
  trainTokenizer,
  DEFAULT_BPE_VOCAB,
  type TokenizerKind,
} from '../../model/tokenizer/index.js';

function requireFlag(args: ParsedArgs, name: string, usage: string): string {
  const v = flagString(args, name);
  if (v === undefined || v === '') throw new InputError(`--${name} is required\nusage: ${usage}`);
  return v;
}

const TRAIN_USAGE = 'rft tokenizer train FILE... --out DIR [--kind bpe|char] [--vocab-size N] [--min-frequency N]';
command({
  name: 'tokenizer train',
  flags: ['out', 'kind', 'vocab-size', 'min-frequency'],
  usage: 'tokenizer train FILE... --out DIR',
  summary: 'train a tokenizer (bpe or char) on taskset / text files; writes DIR/tokenizer.json',
  run(args) {
    const out = requireFlag(args, 'out', TRAIN_USAGE);
    const kind = (flagString(args, 'kind') ?? 'bpe') as TokenizerKind;
    if (kind !== 'bpe' && kind !== 'char') throw new InputError(`--kind must be bpe or char, got '${kind}'`);
    if (args.positional.length === 0) throw new InputError(`no input files\nusage: ${TRAIN_USAGE}`);
    const vocabSize =
      args.flags['vocab-size'] === undefined
        ? kind === 'bpe'
          ? DEFAULT_BPE_VOCAB
          : undefined
        : flagNumber(args, 'vocab-size', 0);
    const minFrequency = args.flags['min-frequency'] === undefined ? undefined : flagNumber(args, 'min-frequency', 0);
    const texts: string[] = [];
    let problems = 0;
    for (const file of args.positional) {
      const r = readCorpusFile(file);
      for (const p of r.problems) console.error(`warning: ${p.message} (line skipped)`);
      problems += r.problems.length;
      texts.push(...r.texts);
    }
    const chars = texts.reduce((n, t) => n + t.length, 0);
    if (chars === 0) throw new InputError(`no training text found in ${args.positional.join(', ')}`);
    const tok = trainTokenizer(kind, texts, { vocabSize, minFrequency });
    const file = saveTokenizer(tok, out);
    console.log(
      JSON.stringify({ file, kind, vocabSize: tok.vocabSize, texts: texts.length, chars, skippedLines: problems }),
    );
    return 0;
  },
});

const ENCODE_USAGE =
  'rft tokenizer encode --tokenizer DIR|DIR/tokenizer.json [--allow-special] TEXT (or text on stdin)';
command({
  name: 'tokenizer encode',
  flags: ['tokenizer'],
  usage: 'tokenizer encode --tokenizer DIR TEXT',
  summary: 'print the token ids of TEXT as a JSON array',
  booleanFlags: ['allow-special'],
  run(args) {
    const tok = loadTokenizer(requireFlag(args, 'tokenizer', ENCODE_USAGE));
    if (args.positional.length > 1)
      throw new InputError(
        `expected one TEXT argument (quote it), got ${args.positional.length}\nusage: ${ENCODE_USAGE}`,
      );
    const text = args.positional.length === 1 ? args.positional[0]! : readFileSync(0, 'utf8');
    console.log(JSON.stringify(tok.encode(text, { allowSpecial: args.flags['allow-special'] === true })));
    return 0;
  },
});

const DECODE_USAGE = 'rft tokenizer decode --tokenizer DIR|DIR/tokenizer.json [--skip-special] IDS_JSON';
command({
  name: 'tokenizer decode',
  flags: ['tokenizer'],
  usage: 'tokenizer decode --tokenizer DIR IDS_JSON',
  summary: 'print the text of a JSON array of token ids',
  booleanFlags: ['skip-special'],
  run(args) {
    const tok = loadTokenizer(requireFlag(args, 'tokenizer', DECODE_USAGE));
    const raw = args.positional.length === 1 ? args.positional[0]! : readFileSync(0, 'utf8');
    let ids: unknown;
    try {
      ids = JSON.parse(raw);
    } catch {
      throw new InputError(`IDS_JSON must be a JSON array of token ids\nusage: ${DECODE_USAGE}`);
    }
    if (!Array.isArray(ids) || !ids.every((x) => Number.isInteger(x)))
      throw new InputError(`IDS_JSON must be a JSON array of integers\nusage: ${DECODE_USAGE}`);
    process.stdout.write(tok.decode(ids as number[], { skipSpecial: args.flags['skip-special'] === true }));
    return 0;
  },
});
