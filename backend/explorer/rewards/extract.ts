// Finds the final answer in a model response. The primary format of every built-in reward is
// `<answer>...</answer>` (the last one wins); `\boxed{...}` and a final `Answer: ...` line are
// accepted as fallbacks (they score the answer but not the format component).
// All scans are linear in the text; only the last MAX_SCAN characters of a response are read.

export const MAX_SCAN = 20_000;

export type AnswerSource = 'tag' | 'boxed' | 'answer_line' | 'hashes' | 'answer_is' | 'none';

export interface Extracted {
  text: string | null;
  source: AnswerSource;
  /** Number of complete `<answer>` blocks (format checks want exactly one). */
  tagCount: number;
}

export function tail(text: string): string {
  return text.length > MAX_SCAN ? text.slice(text.length - MAX_SCAN) : text;
}

/** Every complete `<answer>...</answer>` block, in order (case-insensitive tags). */
export function answerTags(text: string): string[] {
  const lower = text.toLowerCase();
  const out: string[] = [];
  let from = 0;
  for (;;) {
    const open = lower.indexOf('<answer>', from);
    if (open < 0) break;
    const close = lower.indexOf('</answer>', open + 8);
    if (close < 0) break;
    // a nested or repeated opening tag: the block starts at the last opening before the close
    const inner = lower.lastIndexOf('<answer>', close);
    out.push(text.slice(inner + 8, close).trim());
    from = close + 9;
  }
  return out;
}

/** Content of the last `\boxed{...}` (balanced braces), or null. */
export function lastBoxed(text: string): string | null {
  const at = text.lastIndexOf('\\boxed');
  if (at < 0) return null;
  let i = at + 6;
  while (text[i] === ' ') i++;
  if (text[i] !== '{') return null;
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text[j];
    if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return text.slice(i + 1, j).trim();
  }
  return null;
}

/** The value of the last line that reads `Answer: ...` / `Final answer: ...` (markdown bold allowed). */
export function answerLine(text: string): string | null {
  const lines = text.split('\n');
  for (let k = lines.length - 1; k >= 0; k--) {
    const line = lines[k]!.replace(/\*\*/g, '').trim();
    const m = /^(?:#+\s*)?(?:the\s+)?(?:final\s+)?answer\s*(?:is)?\s*[:：=]\s*(.+)$/i.exec(line);
    if (m) return m[1]!.trim();
  }
  return null;
}

/** The text after the last "the answer is" (up to the end of its sentence or line). */
export function answerIs(text: string): string | null {
  const lower = text.toLowerCase();
  const at = lower.lastIndexOf('answer is');
  if (at < 0) return null;
  const rest = text.slice(at + 9);
  const end = rest.search(/\n|\.(?:\s|$)/);
  const v = (end < 0 ? rest : rest.slice(0, end)).replace(/^[\s:：*]+/, '').replace(/[*\s]+$/, '');
  return v === '' ? null : v;
}

/** The text after the last `####` on its line (GSM8K's final-answer marker), or null. */
export function finalHashes(text: string): string | null {
  const at = text.lastIndexOf('####');
  if (at < 0) return null;
  const v = text
    .slice(at + 4)
    .split('\n')[0]!
    .trim();
  return v === '' ? null : v;
}

/** The answer by the primary format, then the fallbacks, in that order. */
export function extractAnswer(response: string, opts: { answerIs?: boolean } = {}): Extracted {
  const text = tail(response);
  const tags = answerTags(text);
  if (tags.length > 0) return { text: tags[tags.length - 1]!, source: 'tag', tagCount: tags.length };
  const boxed = lastBoxed(text);
  if (boxed !== null) return { text: boxed, source: 'boxed', tagCount: 0 };
  const line = answerLine(text);
  if (line !== null) return { text: line, source: 'answer_line', tagCount: 0 };
  // GSM8K style: a worked solution that ends `#### 42`.
  const hashes = finalHashes(text);
  if (hashes !== null) return { text: hashes, source: 'hashes', tagCount: 0 };
  if (opts.answerIs) {
    const is = answerIs(text);
    if (is !== null) return { text: is, source: 'answer_is', tagCount: 0 };
  }
  return { text: null, source: 'none', tagCount: 0 };
}
