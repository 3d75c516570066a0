// The names other datasets give the task fields (`question` for `prompt`, `solution` for `answer`),
// and the record's field that most likely stands for a missing one. No vscode import: the config
// template (src/templates.ts) uses it to write a `format` mapping for a file with foreign names.

/** Names other datasets use for the task fields (GSM8K, MATH, Alpaca, MBPP, ...). */
const SYNONYMS: Record<string, string[]> = {
  prompt: ['question', 'problem', 'query', 'instruction', 'input', 'text', 'content'],
  answer: [
    'solution',
    'output',
    'target',
    'label',
    'final_answer',
    'final',
    'result',
    'ground_truth',
    'gold',
    'expected',
    'ans',
    'reference',
  ],
  id: ['qid', 'uid', 'task_id', 'idx', 'index', 'key'],
  tests: ['test_list', 'test_cases', 'test'],
  response: [
    'completion',
    'reference_output',
    'output',
    'target',
    'demonstration',
    'worked',
    'worked_solution',
    'rationale',
    'explanation',
    'reasoning',
    'chosen',
    'solution',
    'reference',
    'answer',
  ],
};

/** Names that read as a demonstration wherever the word sits (`reference_output`, `gold_completion`, `ideal_response`). */
const RESPONSE_LIKE = /(^|_|-)(output|completion|response|reply|demonstration)s?($|_|-)/i;

function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++)
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
  }
  return d[a.length]![b.length]!;
}

/** The record's field that most likely stands for the missing one. */
export function suggestField(missing: string, record: Record<string, unknown>): string | undefined {
  const keys = Object.keys(record).filter((k) => k !== missing);
  const syn = SYNONYMS[missing] ?? [];
  // The likelier name first (`completion` before `answer` for a response), whatever the record's order.
  return (
    syn.map((s) => keys.find((k) => k.toLowerCase() === s)).find((k) => k !== undefined) ??
    keys.find((k) => k.length > 2 && distance(k.toLowerCase(), missing) <= (missing.length > 4 ? 2 : 1)) ??
    (missing === 'response' ? keys.find((k) => RESPONSE_LIKE.test(k)) : undefined)
  );
}
