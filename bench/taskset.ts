// Taskset loading speed: records/s per format (parse + schema validation), against JSON.parse of the
// same records alone; and the CSV reader's MB/s against csv-parse when that package is installed.
// Usage: npm run bench -- taskset [records]
import { stringify } from 'yaml';
import { parseCsv } from '../backend/core/taskset-text/csv.js';
import { parseTaskset } from '../backend/buffer/taskset/load.js';
import { median, report } from './report.js';

const N = Number(process.argv[2] ?? 20000);
const recs = Array.from({ length: N }, (_, i) => ({
  id: `t${i}`,
  prompt: `What is ${i}, plus "one"?\nThink step by step.`,
  answer: String(i + 1),
  source: 'bench',
}));
const q = (s: string) => `"${s.replace(/"/g, '""')}"`;
const texts = {
  jsonl: recs.map((r) => JSON.stringify(r)).join('\n'),
  json: JSON.stringify(recs, null, 1),
  yaml: stringify(recs),
  csv: ['id,prompt,answer,source', ...recs.map((r) => [r.id, q(r.prompt), r.answer, r.source].join(','))].join('\n'),
};

function time(fn: () => void, reps = 5): number {
  fn(); // warm-up
  const ms: number[] = [];
  for (let k = 0; k < reps; k++) {
    const t = performance.now();
    fn();
    ms.push(performance.now() - t);
  }
  return median(ms);
}

const baseMs = time(() => texts.jsonl.split('\n').forEach((l) => JSON.parse(l)));
for (const [fmt, text] of Object.entries(texts)) {
  const ms = time(
    () => {
      const r = parseTaskset(text, `bench.${fmt}`);
      if (r.tasks.length !== N)
        throw new Error(`${fmt}: loaded ${r.tasks.length} of ${N}: ${JSON.stringify(r.errors.slice(0, 2))}`);
    },
    fmt === 'yaml' ? 2 : 5,
  );
  report({
    bench: 'taskset',
    figure: `load_${fmt}`,
    unit: 'records/s',
    value: (N / ms) * 1000,
    baseline: 'json_parse_only',
    baseline_value: (N / baseMs) * 1000,
  });
}

const mb = texts.csv.length / 1e6;
const oursMs = time(() => parseCsv(texts.csv));
let theirs: number | null = null;
try {
  const mod = 'csv-parse/sync';
  const { parse } = (await import(mod)) as { parse: (t: string) => unknown };
  theirs = mb / (time(() => parse(texts.csv)) / 1000);
} catch {
  // csv-parse is not a dependency; the baseline is there only where someone installed it.
}
report({
  bench: 'taskset',
  figure: 'csv_parse',
  unit: 'MB/s',
  value: mb / (oursMs / 1000),
  baseline: theirs === null ? null : 'csv-parse',
  baseline_value: theirs,
});
