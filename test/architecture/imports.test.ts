// The import graph as docs/architecture.md draws it, checked on every file: the backend's folders
// import only downwards (core <- model <- buffer <- explorer, trainer <- coordinator <- cli, server),
// explorer and trainer never import each other, the extension and the webviews use backend/core
// only, product code imports no test, bench or script file, the benches, examples and dev tools (tools/)
// import no test file, and no runtime import cycle exists
// (type-only imports are erased and cannot cycle at run time); the run loop and setup import no
// process model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Which backend folders each may import (besides itself). */
const ALLOWED: Record<string, string[]> = {
  core: [],
  model: ['core'],
  buffer: ['core', 'model'],
  explorer: ['core', 'model', 'buffer'],
  trainer: ['core', 'model', 'buffer'],
  coordinator: ['core', 'model', 'buffer', 'explorer', 'trainer'],
  server: ['core', 'model', 'buffer', 'explorer', 'trainer', 'coordinator'],
  cli: ['core', 'model', 'buffer', 'explorer', 'trainer', 'coordinator', 'server'],
};

interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
  line: number;
}

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const rel = join(dir, name);
    if (statSync(join(ROOT, rel)).isDirectory()) out.push(...files(rel));
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

// Static imports and re-exports (`import x from`, `import type`, `export … from`, bare `import '…'`)
// and dynamic `import('…')`, relative specifiers only (packages are not part of the graph).
const SPEC = /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g;

function edges(file: string): Edge[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const out: Edge[] = [];
  for (const m of text.matchAll(SPEC)) {
    const spec = m[3] ?? m[4]!;
    const to = normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts');
    // `import { type A, type B } from` is erased too.
    const braces = m[0].match(/\{([^}]*)\}/)?.[1];
    const allTypes =
      braces !== undefined &&
      !/\*/.test(m[0]) &&
      !/import\s+[A-Za-z_$][\w$]*\s*,/.test(m[0]) &&
      braces
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
        .every((s) => s.startsWith('type '));
    out.push({
      from: file,
      to,
      typeOnly: !!m[2] || allTypes,
      line: text.slice(0, m.index).split('\n').length + (m[0].startsWith('\n') ? 1 : 0),
    });
  }
  return out;
}

const ALL = ['backend', 'src', 'webview'].flatMap(files);
const EDGES = ALL.flatMap(edges);
const folderOf = (f: string) => (f.startsWith('backend/') && f.split('/').length > 2 ? f.split('/')[1]! : undefined);

test('the backend folders import downwards only', () => {
  const bad: string[] = [];
  for (const e of EDGES) {
    const a = folderOf(e.from);
    const b = folderOf(e.to);
    if (!a || !b || a === b) continue;
    if (!(a in ALLOWED)) bad.push(`${e.from}: unknown folder ${a}`);
    else if (!ALLOWED[a]!.includes(b)) bad.push(`${e.from}:${e.line} imports ${e.to} (${a} -> ${b})`);
  }
  assert.deepEqual(bad, []);
});

test('the extension and the webviews use backend/core only', () => {
  const bad = EDGES.filter(
    (e) => /^(src|webview)\//.test(e.from) && e.to.startsWith('backend/') && !e.to.startsWith('backend/core/'),
  ).map((e) => `${e.from}:${e.line} imports ${e.to}`);
  assert.deepEqual(bad, []);
});

test('product code imports no test, bench or script file', () => {
  const bad = EDGES.filter(
    (e) => /^(test|bench|scripts)\//.test(e.to) || !/^(backend|src|webview|media)\//.test(e.to),
  ).map((e) => `${e.from}:${e.line} imports ${e.to}`);
  assert.deepEqual(bad, []);
});

test('benches, example scripts and tools/ import no test file (shared helpers live in tools/)', () => {
  const bad = ['bench', 'configs', 'tools']
    .flatMap(files)
    .flatMap(edges)
    .filter((e) => e.to.startsWith('test/'))
    .map((e) => `${e.from}:${e.line} imports ${e.to}`);
  assert.deepEqual(bad, []);
});

/** Files in import cycles (Tarjan's strongly connected components of more than one file). */
function cycles(files: string[], next: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of next.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const f of files) if (!idx.has(f)) visit(f);
  return out;
}

/** Runtime (value) imports of each file. */
const RUNTIME = new Map<string, string[]>();
for (const e of EDGES) if (!e.typeOnly) RUNTIME.set(e.from, [...(RUNTIME.get(e.from) ?? []), e.to]);

test('the cycle finder finds a cycle (it can fail)', () => {
  const g = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', ['a.ts']],
  ]);
  assert.deepEqual(cycles(['a.ts', 'b.ts', 'c.ts', 'd.ts'], g), [['a.ts', 'b.ts', 'c.ts']]);
});

test('no runtime import cycle', () => {
  const found = cycles(ALL, RUNTIME);
  assert.deepEqual(found, [], found.map((c) => c.join(' <-> ')).join('\n'));
});

test('run setup (setup/), the explorer half (explorer-half.ts) and the one run loop (run-loop.ts) import no process model and not run.ts', () => {
  const placements = ALL.filter((f) => f.startsWith('backend/coordinator/placement/'));
  assert.ok(placements.length >= 3, `placement files: ${placements.join(', ')}`);
  const models = [
    ...['run.ts', 'explorer-process.ts', 'trainer-process.ts', 'distributed/explorer.ts', 'distributed/setup.ts'].map(
      (f) => `backend/coordinator/${f}`,
    ),
    ...placements,
  ];
  const setup = ALL.filter((f) => f.startsWith('backend/coordinator/setup/')).map((f) =>
    relative('backend/coordinator', f),
  );
  assert.ok(setup.length >= 4, `setup files: ${setup.join(', ')}`);
  for (const f of [...setup, 'explorer-half.ts', 'run-loop.ts', 'stage-open.ts']) {
    const deps = RUNTIME.get(`backend/coordinator/${f}`) ?? [];
    assert.deepEqual(
      deps.filter((d) => models.includes(d)),
      [],
      f,
    );
  }
});

test('the graph was read (a sanity check on the parser)', () => {
  assert.ok(ALL.length > 300, `${ALL.length} files`);
  assert.ok(
    EDGES.some(
      (e) => (e.from === 'backend/coordinator/run.ts' && folderOf(e.to) === 'trainer') || folderOf(e.to) === 'explorer',
    ),
  );
  assert.ok(EDGES.filter((e) => e.typeOnly).length > 100);
  assert.ok(relative(ROOT, ROOT) === '');
});
