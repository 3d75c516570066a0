// k12: word problems and multiple choice, scored 1 (right) or 0 by normalised matching.
// The answer is read from `<answer>...</answer>` (primary), else `\boxed{}`, an `Answer: ...` line
// or "the answer is ...", else (free answers) the last number in the response / (choices) the last line.
// Free answers: numbers with thousands commas, fractions == decimals, mixed numbers, `$`, units from
// units.ts ("5 cm" == "5cm" == "5 centimeters" == "50 mm"; a bare "5" also matches "5 cm"; a
// different dimension does not), percentages ("50%" == "50 percent" == "50"; "0.5" also accepted),
// otherwise case-, punctuation- and article-insensitive text.
// Choices (task.choices, task.answer a letter or the choice text): "B", "(B)", "B)", "b.", "Option B",
// "the answer is B", "B) whale", or the choice text itself; naming several choices scores 0.
import type { Task } from '../../core/types.js';
import type { RewardResult } from '../workflow.js';
import { extractAnswer, tail, type AnswerSource } from './extract.js';
import { cleanNumberText, numbersMatch, parseNumber } from './numbers.js';
import { Rational } from './rational.js';
import { badTask } from './bad-task.js';
import { lookupUnit, type Unit } from './units.js';

const LETTERS = 'ABCDEFGH';
const HUNDRED = new Rational(100n);

/** Lower case, no punctuation, no articles, single spaces. */
export function normaliseText(s: string): string {
  return s
    .toLowerCase()
    .replace(/[*_`"'“”‘’]/g, '')
    .replace(/[^\p{L}\p{N}\s]/gu, ' ')
    .replace(/\b(?:a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

// ---- free answers -------------------------------------------------------------------------------

export interface Quantity {
  value: Rational;
  /** Known unit, or null (no unit, or a word not in the table such as "apples"). */
  unit: Unit | null;
  numberText: string;
}

const NUMBER_AT_START =
  /^([+-]?(?:\d{1,3}(?:,\d{3})+|\d+|(?=\.\d))(?:\.\d+)?(?:\s+\d+\s*\/\s*\d+|\s*\/\s*\d+(?:\.\d+)?)?)\s*(.*)$/s;

/** "1,200 m", "3/4 cup", "$5", "50%", "x = 7" -> a quantity; null when the text is not one. */
export function parseQuantity(text: string): Quantity | null {
  let s = text
    .trim()
    .replace(/^[a-z]\s*=\s*/i, '')
    .replace(/^(?:about|approximately|≈|~)\s*/i, '');
  if (s.length > 200) return null;
  const whole = parseNumber(s);
  if (whole) return { value: whole, unit: null, numberText: s };
  s = cleanNumberText(s);
  const m = NUMBER_AT_START.exec(s);
  if (!m) return null;
  const value = parseNumber(m[1]!);
  if (!value) return null;
  const suffix = m[2]!.replace(/[.!]+$/, '').trim();
  if (suffix === '') return { value, unit: null, numberText: m[1]! };
  const unit = lookupUnit(suffix);
  if (unit) return { value, unit, numberText: m[1]! };
  // a counted noun ("7 apples", "12 square tiles"): words only, no further numbers
  if (/^[\p{L}\s'-]{1,40}$/u.test(suffix) && suffix.split(/\s+/).length <= 3)
    return { value, unit: null, numberText: m[1]! };
  return null;
}

export function quantitiesMatch(want: Quantity, got: Quantity): boolean {
  if (want.unit && got.unit) {
    if (want.unit.dim !== got.unit.dim) return false;
    if (want.value.mul(want.unit.factor).equals(got.value.mul(got.unit.factor))) return true;
    return want.unit === got.unit && numbersMatch(want.value, got.value, got.numberText);
  }
  if (numbersMatch(want.value, got.value, got.numberText)) return true;
  // 50% vs 0.5 (either way round)
  if (want.unit?.dim === 'percent' && !got.unit) return want.value.div(HUNDRED).equals(got.value);
  if (got.unit?.dim === 'percent' && !want.unit) return got.value.div(HUNDRED).equals(want.value);
  return false;
}

const LAST_NUMBER = /[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*\/\s*\d+)?(?:\s*(?:%|[a-zA-Z°²]+(?:\/[a-z]+)?))?/g;

/** GSM8K-style fallback: the last number in the text (with the unit word after it). */
function lastNumber(text: string): string | null {
  let last: string | null = null;
  for (const m of tail(text).matchAll(LAST_NUMBER)) last = m[0];
  return last;
}

function freeAnswer(reference: string, text: string): boolean {
  const want = parseQuantity(reference);
  if (want) {
    const got = parseQuantity(text);
    return got !== null && quantitiesMatch(want, got);
  }
  const a = normaliseText(text);
  return a !== '' && a === normaliseText(reference);
}

// ---- multiple choice ----------------------------------------------------------------------------

/** The choice index an answer text names, or -1 (none, or more than one). */
export function choiceIndex(text: string, choices: string[]): number {
  const n = choices.length;
  let s = text
    .replace(/[*_`]/g, '')
    .trim()
    .replace(/[.。!]+$/, '')
    .trim();
  s = s.replace(/^(?:the\s+)?(?:correct\s+)?(?:answer|option|choice)\s*(?:is)?\s*[:：]?\s*/i, '');
  const norm = normaliseText(s);
  const byText = choices.findIndex((c) => normaliseText(c) === norm);
  if (norm !== '' && byText >= 0) return byText;
  // a letter alone: B, b, (B), [B], B), B., B:
  let m = /^[([]?([A-Za-z])[)\].:]?$/.exec(s);
  if (m) return letterIndex(m[1]!.toUpperCase(), n);
  // a letter with its text: "B) whale", "(B) whale", "B. whale", "B: whale", "B - whale"
  m = /^[([]?([A-H])(?:[)\].:]|\s*[-–])\s+(.+)$/.exec(s);
  if (m) {
    const k = letterIndex(m[1]!, n);
    if (k < 0) return -1;
    const other = choices.findIndex((c) => normaliseText(c) === normaliseText(m![2]!));
    return other >= 0 && other !== k ? -1 : k; // "B) shark" when shark is A contradicts itself
  }
  return -1;
}

function letterIndex(letter: string, n: number): number {
  const k = LETTERS.indexOf(letter);
  return k >= 0 && k < n ? k : -1;
}

function expectedChoice(task: Task, choices: string[]): number {
  const a = (task.answer ?? '').trim();
  const k = a.length === 1 ? letterIndex(a.toUpperCase(), choices.length) : -1;
  if (k >= 0) return k;
  return choices.findIndex((c) => normaliseText(c) === normaliseText(a));
}

/** Fallback for unformatted choice answers: the last non-empty line, else a unique choice text in it. */
function choiceFallback(response: string, choices: string[]): number {
  const lines = tail(response)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const last = lines[lines.length - 1];
  if (last === undefined) return -1;
  const k = choiceIndex(last, choices);
  if (k >= 0) return k;
  const norm = ` ${normaliseText(last)} `;
  const named = choices.map((c, i) => (norm.includes(` ${normaliseText(c)} `) ? i : -1)).filter((i) => i >= 0);
  return named.length === 1 ? named[0]! : -1;
}

// ---- the reward ---------------------------------------------------------------------------------

export async function k12(task: Task, response: string): Promise<RewardResult> {
  if (typeof task.answer !== 'string' || task.answer.trim() === '') return badTask('k12 needs task.answer');
  const ex = extractAnswer(response, { answerIs: true });
  let source: AnswerSource | 'last_number' | 'last_line' = ex.source;
  let correct = false;
  let extracted = ex.text ?? '';
  if (task.choices && task.choices.length > 0) {
    const want = expectedChoice(task, task.choices);
    if (want < 0) return badTask(`answer '${task.answer}' is not a letter or one of the choices`);
    let got: number;
    if (ex.text !== null) got = choiceIndex(ex.text, task.choices);
    else {
      source = 'last_line';
      got = choiceFallback(response, task.choices);
    }
    correct = got === want;
    if (got >= 0) extracted = LETTERS[got]!;
  } else {
    let text = ex.text;
    if (text === null) {
      source = 'last_number';
      text = lastNumber(response);
    }
    extracted = text ?? '';
    correct = text !== null && freeAnswer(task.answer, text);
  }
  return {
    reward: correct ? 1 : 0,
    status: 'ok',
    details: { correct: correct ? 1 : 0, source, extracted: extracted.slice(0, 200) },
  };
}
