// A chat template rendered with limits. @huggingface/jinja interprets a template with no bound:
// `range(1000000000)` builds a billion-element array (V8 aborts the process), a loop over a large
// range never returns, and a 30 MB template takes seconds and gigabytes to parse. Every model
// folder is untrusted input, and the template runs for every prompt of a run, so:
//   - the template text is capped before it is parsed (MAX_TEMPLATE_CHARS);
//   - `range()` refuses more than MAX_RANGE items (the one builtin that allocates from a number);
//   - the interpreter counts evaluation steps and checks a deadline every 256 of them;
//   - every string a step produces is checked against the output cap.
// Counting in the same thread costs a few percent of a render (microseconds for a chat template)
// and needs no worker per prompt; a worker with a deadline could only kill the render after the fact.
import { Environment, Interpreter, Template } from '@huggingface/jinja';

/** Larger than any published chat template (the largest are tens of KB) by far. */
export const MAX_TEMPLATE_CHARS = 1 << 20;
// A for loop builds a scope per item before its first iteration (~0.6 s per million here), out of the
// deadline's reach: keep that pre-pass short. Chat templates range over messages, never this many.
export const MAX_RANGE = 100_000;
export const DEFAULT_DEADLINE_MS = 2000;
/** Output cap: this much plus 8x the characters the messages bring (a template repeats them a few times at most). */
export const BASE_OUTPUT_CHARS = 1 << 20;

/** Thrown when a render passes a limit; the caller adds the template's file and field. */
export class TemplateLimitError extends Error {
  override name = 'TemplateLimitError';
}

export interface RenderLimits {
  deadlineMs?: number;
  maxOutputChars?: number;
}

type Node = Parameters<Interpreter['evaluate']>[0];
type Scope = Parameters<Interpreter['evaluate']>[1];

class CountingInterpreter extends Interpreter {
  private steps = 0;
  constructor(
    env: Environment,
    private readonly deadline: number,
    private readonly maxChars: number,
  ) {
    super(env);
    // A loop with an empty body evaluates no node per item, only an (empty) block: count blocks
    // too (evaluateBlock is private in the typings, so it is wrapped on the instance).
    const self = this as unknown as { evaluateBlock: (...a: unknown[]) => unknown };
    const block = self.evaluateBlock;
    self.evaluateBlock = (...a: unknown[]) => {
      this.tick();
      return block.apply(this, a);
    };
  }

  private tick(): void {
    if ((++this.steps & 255) === 0 && performance.now() > this.deadline) {
      throw new TemplateLimitError(
        `rendering took longer than the time limit (${this.steps} steps): the template loops too long`,
      );
    }
  }

  override evaluate(node: Node, scope: Scope): ReturnType<Interpreter['evaluate']> {
    this.tick();
    const v = super.evaluate(node, scope);
    const s = (v as { value?: unknown }).value;
    if (typeof s === 'string' && s.length > this.maxChars) {
      throw new TemplateLimitError(`rendering produced over ${this.maxChars} characters (the output limit)`);
    }
    return v;
  }
}

function boundedRange(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) [start, stop] = [0, start];
  if (step === 0) throw new Error('range() step must not be zero');
  const n = Math.max(0, Math.ceil((stop - start) / step));
  if (!Number.isFinite(n) || n > MAX_RANGE)
    throw new TemplateLimitError(`range() of ${n} items is over the limit of ${MAX_RANGE}`);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = start + i * step;
  return out;
}

// The same as @huggingface/jinja's own strftime_now (the globals it sets up are not exported).
function strftimeNow(format: string): string {
  const d = new Date();
  const pad2 = (n: number) => (n < 10 ? '0' : '') + n;
  return format.replace(/%[YmdbBHM%]/g, (t) => {
    switch (t) {
      case '%Y':
        return String(d.getFullYear());
      case '%m':
        return pad2(d.getMonth() + 1);
      case '%d':
        return pad2(d.getDate());
      case '%b':
        return new Intl.DateTimeFormat(undefined, { month: 'short' }).format(d);
      case '%B':
        return new Intl.DateTimeFormat(undefined, { month: 'long' }).format(d);
      case '%H':
        return pad2(d.getHours());
      case '%M':
        return pad2(d.getMinutes());
      default:
        return '%';
    }
  });
}

export class BoundedTemplate {
  private readonly parsed: Template['parsed'];

  /** Parses TEXT; a TemplateLimitError when it is over MAX_TEMPLATE_CHARS, the parser's error otherwise. */
  constructor(readonly text: string) {
    if (text.length > MAX_TEMPLATE_CHARS) {
      throw new TemplateLimitError(
        `the template is ${text.length} characters, over the limit of ${MAX_TEMPLATE_CHARS}`,
      );
    }
    this.parsed = new Template(text).parsed;
  }

  render(items: Record<string, unknown>, limits: RenderLimits = {}): string {
    const env = new Environment();
    // The globals @huggingface/jinja's Template.render sets, with range() bounded.
    const globals: Record<string, unknown> = {
      false: false,
      true: true,
      none: null,
      False: false,
      True: true,
      None: null,
      raise_exception: (msg: unknown) => {
        throw new Error(String(msg));
      },
      range: boundedRange,
      strftime_now: strftimeNow,
    };
    for (const [k, v] of Object.entries({ ...globals, ...items })) env.set(k, v);
    const deadline = performance.now() + (limits.deadlineMs ?? DEFAULT_DEADLINE_MS);
    const it = new CountingInterpreter(env, deadline, limits.maxOutputChars ?? BASE_OUTPUT_CHARS);
    return it.run(this.parsed).value as string;
  }
}
