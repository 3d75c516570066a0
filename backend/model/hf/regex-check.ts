// The regexes of a tokenizer.json (pre-tokenizer and normalizer patterns) are run on every prompt
// and response by @huggingface/tokenizers, with JavaScript's backtracking engine, which cannot be
// interrupted: `(a+)+$` made a 44-character prompt take minutes. A pattern with a repeated group that
// itself repeats without bound (star height 2: `(a+)+`, `(\w*\s?)*`, `(?:x+){2,}`), the shape of
// catastrophic backtracking, is refused at load, naming the file, the field and the regex. Real
// tokenizers (GPT-2, Llama 3, Qwen) have none: their only repeated groups are bounded or absent.
import { InputError } from '../../core/errors.js';

/** Where PATTERN repeats a group that holds an unbounded repeat (its index), or undefined. */
export function nestedRepeat(pattern: string): number | undefined {
  // One frame per open group: whether an unbounded repeat was seen inside it.
  const stack: { start: number; unbounded: boolean }[] = [{ start: 0, unbounded: false }];
  /** What the next quantifier applies to: a group that holds an unbounded repeat, or an atom. */
  let last: { group: boolean; unbounded: boolean } | undefined;
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === '\\') {
      i += 2;
      last = { group: false, unbounded: false };
      continue;
    }
    if (c === '[') {
      // A class is one atom; ']' first in it is literal, escapes skip a character.
      let j = i + 1;
      if (pattern[j] === '^') j++;
      if (pattern[j] === ']') j++;
      while (j < pattern.length && pattern[j] !== ']') j += pattern[j] === '\\' ? 2 : 1;
      i = j + 1;
      last = { group: false, unbounded: false };
      continue;
    }
    if (c === '(') {
      stack.push({ start: i, unbounded: false });
      last = undefined;
      i++;
      continue;
    }
    if (c === ')') {
      const g = stack.length > 1 ? stack.pop()! : { start: i, unbounded: false };
      last = { group: true, unbounded: g.unbounded };
      // What the group holds is inside its parent too.
      if (g.unbounded) stack[stack.length - 1]!.unbounded = true;
      i++;
      continue;
    }
    const q = quantifier(pattern, i);
    if (q) {
      if (q.unbounded) {
        if (last?.group && last.unbounded) return i;
        stack[stack.length - 1]!.unbounded = true;
      }
      last = undefined;
      i = q.end;
      continue;
    }
    last = { group: false, unbounded: false };
    i++;
  }
  return undefined;
}

/** A quantifier at I (`*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`, with a lazy or possessive mark): its end and whether it is unbounded. */
function quantifier(p: string, i: number): { end: number; unbounded: boolean } | undefined {
  const c = p[i];
  let end: number;
  let unbounded: boolean;
  if (c === '*' || c === '+') [end, unbounded] = [i + 1, true];
  else if (c === '?') [end, unbounded] = [i + 1, false];
  else if (c === '{') {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(p.slice(i));
    if (!m) return undefined;
    end = i + m[0].length;
    unbounded = m[2] !== undefined && m[3] === '';
  } else return undefined;
  if (p[end] === '?' || p[end] === '+') end++;
  return { end, unbounded };
}

/**
 * Every `{Regex: ...}` pattern in a tokenizer.json outside its vocabulary (normalizer,
 * pre_tokenizer, decoder, post_processor, nested Sequences): refused when it can backtrack
 * catastrophically.
 */
export function checkTokenizerRegexes(json: Record<string, unknown>, file: string): void {
  const walk = (v: unknown, path: string): void => {
    if (!v || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      v.forEach((x, k) => walk(x, `${path}[${k}]`));
      return;
    }
    const o = v as Record<string, unknown>;
    if (typeof o.Regex === 'string') {
      const at = nestedRepeat(o.Regex);
      if (at !== undefined)
        throw new InputError(
          `regex ${JSON.stringify(o.Regex)} repeats a group that itself repeats without bound (at character ${at}, as in '(a+)+'): it can take minutes on one prompt, so it is refused`,
          { file, field: `${path}.Regex` },
        );
    }
    for (const [k, x] of Object.entries(o)) walk(x, path ? `${path}.${k}` : k);
  };
  for (const [k, v] of Object.entries(json)) if (k !== 'model' && k !== 'added_tokens') walk(v, k);
}
