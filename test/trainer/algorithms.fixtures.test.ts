// Reference-value tests: every case of the fixture file (RFT_ALGO_FIXTURES, default
// ../shared/fixtures/algorithms.json from the working directory) against the algorithm units.
// One test per case; a case with an unknown `fn` fails, naming it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { ADAPTERS, type AdapterResult, type FixtureCase } from './algorithms-fixture-adapters.js';

interface Tol {
  rtol: number;
  atol: number;
}
interface FixtureFile {
  name?: string;
  tolerance?: { float64?: Tol; float32?: Tol };
  case_count?: number;
  cases: FixtureCase[];
}

const path = resolve(process.cwd(), process.env.RFT_ALGO_FIXTURES ?? '../shared/fixtures/algorithms.json');
const file = JSON.parse(readFileSync(path, 'utf8')) as FixtureFile;
const TOL: Record<'float64' | 'float32', Tol> = {
  float64: file.tolerance?.float64 ?? { rtol: 1e-6, atol: 1e-9 },
  float32: file.tolerance?.float32 ?? { rtol: 1e-4, atol: 1e-5 },
};

await initEngine();

/** Recursive comparison; returns the first few mismatches as "key[index]: actual vs expected". */
function compare(
  expected: unknown,
  actual: unknown,
  at: string,
  tol: Tol,
  skip: (at: string) => boolean,
  out: string[],
): void {
  if (out.length >= 8) return;
  if (skip(at)) return;
  if (typeof expected === 'number') {
    if (typeof actual === 'boolean') actual = actual ? 1 : 0;
    if (typeof actual !== 'number') {
      out.push(`${at}: expected ${expected}, got ${actual === undefined ? 'nothing' : JSON.stringify(actual)}`);
      return;
    }
    const ok = Math.abs(actual - expected) <= tol.atol + tol.rtol * Math.abs(expected);
    if (!ok)
      out.push(`${at}: got ${actual}, expected ${expected} (|diff| ${Math.abs(actual - expected).toExponential(3)})`);
    return;
  }
  if (typeof expected === 'string' || typeof expected === 'boolean' || expected === null) {
    if (actual !== expected) out.push(`${at}: got ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
    return;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) {
      out.push(
        `${at}: expected an array of ${expected.length}, got ${Array.isArray(actual) ? `an array of ${actual.length}` : JSON.stringify(actual)}`,
      );
      return;
    }
    expected.forEach((e, i) => compare(e, actual[i], `${at}[${i}]`, tol, skip, out));
    return;
  }
  if (typeof expected === 'object') {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) {
      out.push(`${at}: expected an object, got ${JSON.stringify(actual)}`);
      return;
    }
    for (const [k, e] of Object.entries(expected))
      compare(e, (actual as Record<string, unknown>)[k], at ? `${at}.${k}` : k, tol, skip, out);
  }
}

/** Skips positions a per-token key was not computed on (masked tokens) when the adapter says so. */
function skipper(r: AdapterResult): (at: string) => boolean {
  if (!r.unmaskedOnly) return () => false;
  const { keys, mask } = r.unmaskedOnly;
  return (at) => {
    const m = /^([^[.]+)\[(\d+)\]\[(\d+)\]$/.exec(at);
    if (!m || !keys.includes(m[1]!)) return false;
    return !mask[Number(m[2])]?.[Number(m[3])];
  };
}

test(`fixture file ${file.name ?? path} is complete`, () => {
  assert.ok(file.cases.length > 0, `${path}: no cases`);
  if (file.case_count !== undefined)
    assert.equal(file.cases.length, file.case_count, `${path}: case_count says ${file.case_count}`);
  const ids = file.cases.map((c) => c.id);
  assert.equal(new Set(ids).size, ids.length, 'case ids must be unique');
});

for (const c of file.cases) {
  test(c.id, () => {
    const adapter = ADAPTERS[c.fn];
    if (!adapter) assert.fail(`case ${c.id}: unknown fn '${c.fn}' (implemented: ${Object.keys(ADAPTERS).join(', ')})`);
    const r = adapter(c);
    const problems: string[] = [];
    compare(c.expected, r.actual, '', TOL[r.precision], skipper(r), problems);
    if (problems.length) assert.fail(`case ${c.id} (${c.fn}, ${r.precision} tolerance):\n  ${problems.join('\n  ')}`);
  });
}
