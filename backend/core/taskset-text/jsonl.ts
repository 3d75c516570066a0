// JSON Lines: one record per non-blank line; a line that is not JSON is one error, the rest still load.
import type { RawRecord } from './index.js';

export function readJsonl(text: string): RawRecord[] {
  const out: RawRecord[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const s = lines[i]!.trim();
    if (s === '') continue;
    try {
      out.push({ line: i + 1, value: JSON.parse(s) });
    } catch (e) {
      out.push({ line: i + 1, error: `bad JSON: ${(e as Error).message}` });
    }
  }
  return out;
}
