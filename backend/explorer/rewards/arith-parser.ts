// A small recursive-descent parser and exact evaluator for arithmetic expressions: non-negative
// number literals, + - * / (also × ÷) and parentheses, nothing else (no unary minus, no powers,
// no names). Never eval. Sizes are bounded so hostile input costs at most linear work.
import { parseDecimal, type Rational } from './rational.js';

export const MAX_EXPRESSION = 400;
const MAX_DEPTH = 40;

export class ExpressionError extends Error {}

type Token = { kind: 'num'; text: string; value: Rational } | { kind: 'op'; text: string };

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    if ((c >= '0' && c <= '9') || c === '.') {
      let j = i;
      while (j < src.length && ((src[j]! >= '0' && src[j]! <= '9') || src[j] === '.')) j++;
      const text = src.slice(i, j);
      const value = parseDecimal(text);
      if (!value || text.startsWith('.') || text.endsWith('.')) throw new ExpressionError(`bad number '${text}'`);
      out.push({ kind: 'num', text, value });
      i = j;
      continue;
    }
    const op = c === '×' || c === '·' ? '*' : c === '÷' ? '/' : c === '−' ? '-' : c;
    if ('+-*/()'.includes(op)) {
      out.push({ kind: 'op', text: op });
      i++;
      continue;
    }
    throw new ExpressionError(`unexpected character '${c}'`);
  }
  return out;
}

export interface Evaluated {
  value: Rational;
  /** Every number literal, in order of appearance. */
  numbers: Rational[];
}

/** Parses and evaluates exactly; throws ExpressionError (syntax) or RangeError (division by zero). */
export function evaluateExpression(src: string): Evaluated {
  if (src.length > MAX_EXPRESSION) throw new ExpressionError(`expression longer than ${MAX_EXPRESSION} characters`);
  const toks = tokenize(src);
  if (toks.length === 0) throw new ExpressionError('empty expression');
  const numbers: Rational[] = [];
  let pos = 0;
  const peek = (): string | undefined => {
    const t = toks[pos];
    return t?.kind === 'op' ? t.text : undefined;
  };
  const expr = (depth: number): Rational => {
    if (depth > MAX_DEPTH) throw new ExpressionError('too deeply nested');
    let v = term(depth);
    for (let op = peek(); op === '+' || op === '-'; op = peek()) {
      pos++;
      const r = term(depth);
      v = op === '+' ? v.add(r) : v.sub(r);
    }
    return v;
  };
  const term = (depth: number): Rational => {
    let v = factor(depth);
    for (let op = peek(); op === '*' || op === '/'; op = peek()) {
      pos++;
      const r = factor(depth);
      v = op === '*' ? v.mul(r) : v.div(r);
    }
    return v;
  };
  const factor = (depth: number): Rational => {
    const t = toks[pos];
    if (!t) throw new ExpressionError('expression ends too early');
    pos++;
    if (t.kind === 'num') {
      numbers.push(t.value);
      return t.value;
    }
    if (t.text === '(') {
      const v = expr(depth + 1);
      if (peek() !== ')') throw new ExpressionError("missing ')'");
      pos++;
      return v;
    }
    throw new ExpressionError(`unexpected '${t.text}'`);
  };
  const value = expr(0);
  if (pos !== toks.length) throw new ExpressionError(`unexpected '${toks[pos]!.text}'`);
  return { value, numbers };
}

/** Numbers in `used` that exceed their multiplicity in `given` (empty when the use is allowed). */
export function overusedNumbers(used: Rational[], given: Rational[]): Rational[] {
  const left = new Map<string, number>();
  for (const g of given) left.set(g.toString(), (left.get(g.toString()) ?? 0) + 1);
  const over: Rational[] = [];
  for (const u of used) {
    const k = u.toString();
    const n = left.get(k) ?? 0;
    if (n === 0) over.push(u);
    else left.set(k, n - 1);
  }
  return over;
}
