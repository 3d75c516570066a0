// Pulls the code of a JavaScript function out of a model's response: the fenced code block that
// defines it (```js, ```javascript or a bare fence), else the function definition found in prose,
// else the whole response. `export` keywords are dropped (the code runs as a script).

const FENCE = /```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n([\s\S]*?)(?:```|$)/g;

function definesName(code: string, name: string): boolean {
  const n = name.replace(/[$]/g, '\\$');
  return new RegExp(`(function\\s*\\*?\\s*${n}\\s*\\(|(const|let|var)\\s+${n}\\s*=|class\\s+${n}\\b)`).test(code);
}

/** End index (exclusive) of the brace block starting at `open`, skipping strings and comments. */
function matchBraces(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s[i]!;
    if (c === '"' || c === "'" || c === '`') {
      for (i++; i < s.length && s[i] !== c; i++) if (s[i] === '\\') i++;
    } else if (c === '/' && s[i + 1] === '/') {
      while (i < s.length && s[i] !== '\n') i++;
    } else if (c === '/' && s[i + 1] === '*') {
      const end = s.indexOf('*/', i + 2);
      i = end < 0 ? s.length : end + 1;
    } else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i + 1;
  }
  return s.length;
}

export interface ExtractedCode {
  code: string;
  /** Where it came from: a fenced block, a definition found in prose, or the raw response. */
  source: 'fence' | 'prose' | 'raw';
}

export function extractFunction(response: string, name: string): ExtractedCode {
  const blocks: { lang: string; body: string }[] = [];
  for (const m of response.matchAll(FENCE)) blocks.push({ lang: m[1]!.toLowerCase(), body: m[2]! });
  const js = blocks.filter((b) => ['', 'js', 'javascript', 'ts', 'typescript', 'mjs', 'node'].includes(b.lang));
  const hit = js.find((b) => definesName(b.body, name)) ?? js[0];
  if (hit) return { code: stripExport(hit.body), source: 'fence' };
  const n = name.replace(/[$]/g, '\\$');
  const m = new RegExp(`(?:export\\s+)?(?:async\\s+)?function\\s*\\*?\\s*${n}\\s*\\(`).exec(response);
  if (m) {
    const open = response.indexOf('{', m.index + m[0].length);
    if (open >= 0) return { code: stripExport(response.slice(m.index, matchBraces(response, open))), source: 'prose' };
  }
  return { code: stripExport(response), source: 'raw' };
}

function stripExport(code: string): string {
  return code.replace(/^(\s*)export\s+(default\s+)?(?=(async\s+)?function|const|let|var|class)/gm, '$1');
}
