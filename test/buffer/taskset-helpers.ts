// Builds the "1,000 good + 37 bad lines" JSONL taskset used by the loader and CLI tests.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type BadKind = 'bad_json' | 'missing_field' | 'wrong_type' | 'empty_prompt' | 'duplicate_id';
export const BAD_KINDS: BadKind[] = ['bad_json', 'missing_field', 'wrong_type', 'empty_prompt', 'duplicate_id'];

export interface BadLine {
  line: number;
  kind: BadKind;
  field: string;
  /** For duplicates: the line of the first occurrence. */
  firstLine?: number;
}

/** 1,000 valid math records with 37 bad ones spread among them (kinds in rotation). */
export function mixedTaskset(good = 1000, bad = 37): { text: string; bad: BadLine[] } {
  const lines: string[] = [];
  const bads: BadLine[] = [];
  const goodLineOf = new Map<string, number>();
  const every = Math.floor(good / bad);
  let g = 0;
  let b = 0;
  while (g < good || b < bad) {
    if (b < bad && g > 0 && g % every === 0 && (bads.length === 0 || bads[bads.length - 1]!.line !== lines.length)) {
      const kind = BAD_KINDS[b % BAD_KINDS.length]!;
      const line = lines.length + 1;
      switch (kind) {
        case 'bad_json':
          lines.push(`{"id": "bad-${b}", "prompt": "What is 1+1?", "answer": "2"`); // missing brace
          bads.push({ line, kind, field: '(record)' });
          break;
        case 'missing_field':
          lines.push(JSON.stringify({ id: `bad-${b}`, prompt: 'What is 2+2?' }));
          bads.push({ line, kind, field: 'answer' });
          break;
        case 'wrong_type':
          lines.push(JSON.stringify({ id: `bad-${b}`, prompt: ['not', 'a', 'string'], answer: '3' }));
          bads.push({ line, kind, field: 'prompt' });
          break;
        case 'empty_prompt':
          lines.push(JSON.stringify({ id: `bad-${b}`, prompt: '   ', answer: '3' }));
          bads.push({ line, kind, field: 'prompt' });
          break;
        case 'duplicate_id': {
          const dupOf = `t${Math.floor(g / 2)}`;
          lines.push(JSON.stringify({ id: dupOf, prompt: 'again', answer: '1' }));
          bads.push({ line, kind, field: 'id', firstLine: goodLineOf.get(dupOf)! });
          break;
        }
      }
      b++;
      if (g < good) continue;
    }
    if (g < good) {
      const id = `t${g}`;
      lines.push(
        JSON.stringify({ id, prompt: `What is ${g} + ${g % 7}?`, answer: g % 2 ? g + (g % 7) : String(g + (g % 7)) }),
      );
      goodLineOf.set(id, lines.length);
      g++;
    } else if (b < bad) {
      // Only if bad lines are left over at the end.
      lines.push(JSON.stringify({ id: `bad-${b}`, prompt: '', answer: '1' }));
      bads.push({ line: lines.length, kind: 'empty_prompt', field: 'prompt' });
      b++;
    }
  }
  return { text: lines.join('\n') + '\n', bad: bads };
}

export function tempDir(prefix = 'rft-taskset-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}
