// backend/coordinator has no import cycle (the process models each build from setup.ts; none
// imports run.ts), and run setup does not import a process model. Static value imports only
// (`import type` is erased); relative specifiers resolved to their .ts files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function graph(dir: string): Map<string, string[]> {
  const files: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.ts')) files.push(resolve(p));
    }
  };
  walk(dir);
  const known = new Set(files);
  const g = new Map<string, string[]>();
  for (const f of files) {
    const src = readFileSync(f, 'utf8');
    const deps: string[] = [];
    for (const m of src.matchAll(/^(?:import|export)\s+(?!type\b)[^'"]*?from\s+'(\.[^']+)'|^import\s+'(\.[^']+)'/gm)) {
      const to = resolve(dirname(f), (m[1] ?? m[2])!.replace(/\.js$/, '.ts'));
      if (known.has(to)) deps.push(to);
    }
    g.set(f, deps);
  }
  return g;
}

function cycles(g: Map<string, string[]>): string[][] {
  const out: string[][] = [];
  const seen = new Set<string>();
  const onStack: string[] = [];
  const visit = (n: string) => {
    seen.add(n);
    onStack.push(n);
    for (const d of g.get(n) ?? []) {
      const at = onStack.indexOf(d);
      if (at >= 0) out.push([...onStack.slice(at), d].map((x) => relative(ROOT, x)));
      else if (!seen.has(d)) visit(d);
    }
    onStack.pop();
  };
  for (const n of g.keys()) if (!seen.has(n)) visit(n);
  return out;
}

test('the cycle finder finds a cycle (it can fail)', () => {
  const g = new Map([
    ['/a.ts', ['/b.ts']],
    ['/b.ts', ['/a.ts']],
  ]);
  assert.equal(cycles(g).length, 1);
});

test('backend/ has no import cycle through backend/coordinator', () => {
  const found = cycles(graph(join(ROOT, 'backend'))).filter((c) => c.some((f) => f.startsWith('backend/coordinator/')));
  assert.deepEqual(found, []);
});

test('setup.ts, loop.ts and the one run loop (run-loop.ts) import no process model and not run.ts', () => {
  const g = graph(join(ROOT, 'backend'));
  const models = [
    'run.ts',
    'processes-run.ts',
    'explorer-process.ts',
    'trainer-process.ts',
    'explore-bench.ts',
    'placement/memory.ts',
    'distributed/trainer.ts',
    'distributed/explorer.ts',
    'distributed/setup.ts',
  ].map((f) => resolve(ROOT, 'backend/coordinator', f));
  for (const f of ['setup.ts', 'loop.ts', 'run-loop.ts']) {
    const deps = g.get(resolve(ROOT, 'backend/coordinator', f)) ?? [];
    assert.deepEqual(
      deps.filter((d) => models.includes(d)),
      [],
      f,
    );
  }
});
