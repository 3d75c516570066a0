// `npm run bench -- tokenizer [MB]`: byte-level BPE training time and encode / decode throughput,
// with Hugging Face's tokenizers.js (the same tokenizer.json) as the encode baseline.
// Text: TypeScript's lib .d.ts files (English doc comments + code), about MB megabytes (default 3).
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { CharTokenizer, tokenizerConfig, trainBpe, type Tokenizer } from '../backend/model/tokenizer/index.js';
import { median, report } from './report.js';

const MB = Number(process.argv[2] ?? 3);
const VOCAB = Number(process.env.BENCH_VOCAB ?? 4096);
const REPS = Number(process.env.BENCH_REPS ?? 3);

function corpus(bytes: number): string {
  const lib = dirname(createRequire(import.meta.url).resolve('typescript/lib/typescript.js'));
  let text = '';
  for (const f of readdirSync(lib)
    .filter((f) => /^lib\..*\.d\.ts$/.test(f))
    .sort()) {
    text += readFileSync(join(lib, f), 'utf8');
    if (text.length >= bytes) break;
  }
  return text.slice(0, bytes);
}

function timeMs(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

const text = corpus(MB * 1e6);
const mb = Buffer.byteLength(text) / 1e6;
const trainTimes: number[] = [];
let bpe = trainBpe([text.slice(0, 1000)], { vocabSize: 300 });
for (let i = 0; i < Math.max(1, REPS - 1); i++)
  trainTimes.push(timeMs(() => (bpe = trainBpe([text], { vocabSize: VOCAB }))));
report({
  bench: 'tokenizer',
  figure: `bpe_train_${VOCAB}_on_${mb.toFixed(1)}MB`,
  unit: 's',
  value: median(trainTimes) / 1000,
  vocab: bpe.vocabSize,
});

function encodeFigures(name: string, tok: Tokenizer): void {
  const hf = new HfTokenizer(JSON.parse(JSON.stringify(tok.toJSON())), tokenizerConfig(tok));
  // Encode in chunks of ~4 kB, the size of a prompt or response; a fresh tokenizer per run would
  // measure cache warm-up instead, so each side's cache is warmed by the first pass.
  const chunks: string[] = [];
  for (let i = 0; i < text.length; i += 4000) chunks.push(text.slice(i, i + 4000));
  const ours: number[] = [];
  const theirs: number[] = [];
  let ids: number[][] = [];
  for (let r = 0; r < REPS; r++) {
    ours.push(timeMs(() => (ids = chunks.map((c) => tok.encode(c)))));
    theirs.push(timeMs(() => chunks.forEach((c) => hf.encode(c))));
  }
  const v = mb / (median(ours) / 1000);
  const b = mb / (median(theirs) / 1000);
  report({
    bench: 'tokenizer',
    figure: `${name}_encode`,
    unit: 'MB/s',
    value: v,
    baseline: 'huggingface_tokenizers_js_0.2.0',
    baseline_value: b,
  });
  const dec = Array.from({ length: REPS }, () => timeMs(() => ids.forEach((x) => tok.decode(x))));
  report({ bench: 'tokenizer', figure: `${name}_decode`, unit: 'MB/s', value: mb / (median(dec) / 1000) });
  const tokens = ids.reduce((n, x) => n + x.length, 0);
  report({ bench: 'tokenizer', figure: `${name}_bytes_per_token`, unit: 'bytes/token', value: (mb * 1e6) / tokens });
}

encodeFigures('bpe', bpe);
encodeFigures('char', CharTokenizer.train([text]));
