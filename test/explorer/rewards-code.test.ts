// code_tests: right, partly right, wrong, malformed and hostile solutions, and results the code
// tries to forge. Runs the real sandbox (worker processes).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { Task } from '../../backend/core/types.js';
import { runCodeTests } from '../../backend/explorer/rewards/code_tests.js';
import { SandboxPool } from '../../backend/explorer/sandbox/index.js';

const pool = new SandboxPool({ workers: 2, timeoutMs: 1500, killGraceMs: 400 });
after(() => pool.close());

const sumTask: Task = {
  id: 's',
  taskset: 't',
  domain: 'code',
  prompt: 'Write sumList(xs) returning the sum.',
  entryPoint: 'sumList',
  tests: [
    { args: [[1, 2, 3]], expected: 6 },
    { args: [[]], expected: 0 },
    { args: [[-1, 1]], expected: 0 },
    { args: [[0.1, 0.2]], expected: 0.3 },
  ],
};
const score = (response: string, task: Task = sumTask) => runCodeTests(task, response, pool);

test('right solutions get 1: in a fence, in prose, as an arrow function, async, next to other languages', async () => {
  for (const response of [
    'Here you go:\n```js\nfunction sumList(xs) {\n  return xs.reduce((a, b) => a + b, 0);\n}\n```',
    '```javascript\nexport function sumList(xs) { let s = 0; for (const x of xs) s += x; return s; }\n```\nDone.',
    'The function is function sumList(xs) { return xs.reduce((a, b) => a + b, 0) } and that is all.',
    '```\nconst sumList = (xs) => xs.reduce((a, b) => a + b, 0);\n```',
    '```python\ndef sumList(xs): return 0\n```\n```js\nasync function sumList(xs) { return xs.reduce((a, b) => a + b, 0) }\n```',
  ]) {
    const r = await score(response);
    assert.equal(r.status, 'ok');
    assert.equal(r.reward, 1, `${response}\n${JSON.stringify(r)}`);
  }
});

test('deep equality for arrays and objects; exact integers, tolerant floats', async () => {
  const t: Task = {
    id: 'p',
    taskset: 't',
    domain: 'code',
    prompt: 'p',
    entryPoint: 'pairs',
    tests: [
      { args: [2], expected: [{ i: 0 }, { i: 1 }] },
      { args: [0], expected: [] },
    ],
  };
  assert.equal((await score('function pairs(n) { return Array.from({ length: n }, (_, i) => ({ i })) }', t)).reward, 1);
  assert.equal(
    (await score('function pairs(n) { return Array.from({ length: n }, (_, i) => ({ i, extra: 1 })) }', t)).reward,
    0.5,
  );
  assert.equal(
    (await score('function pairs(n) { return Array.from({ length: n }, (_, i) => ({ i: String(i) })) }', t)).reward,
    0.5,
  );
  const big: Task = {
    id: 'b',
    taskset: 't',
    domain: 'code',
    prompt: 'p',
    entryPoint: 'f',
    tests: [{ args: [], expected: 9007199254740991 }],
  };
  assert.equal((await score('function f() { return 9007199254740990 }', big)).reward, 0, 'integers compare exactly');
});

test('partly right solutions get the fraction of tests passed', async () => {
  const r = await score('function sumList(xs) { return xs.length ? xs[0] + xs[1] + (xs[2] || 0) : 1 }');
  // [1,2,3] -> 6 ok; [] -> 1 wrong; [-1,1] -> 0 ok; [0.1,0.2] -> 0.30000000000000004 ok (tolerance)
  assert.equal(r.reward, 0.75);
  assert.equal(r.details?.passed, 3);
  const r2 = await score(
    'function sumList(xs) { if (xs.length === 0) throw new Error("empty"); return xs.reduce((a, b) => a + b) }',
  );
  assert.equal(r2.reward, 0.75, 'a throwing test fails alone');
  assert.match(String(r2.details?.error), /empty/);
});

test('wrong and malformed solutions get 0 with status ok', async () => {
  for (const [response, kind] of [
    ['function sumList(xs) { return 42 }', 'ok'],
    ['function sumlist(xs) { return 0 }', 'ok'], // wrong name: every call reports 'missing'
    ['```js\nfunction sumList(xs) { return xs.reduce((a, b) => a + b, 0)\n```', 'syntax_error'], // unclosed
    ['I cannot write this function.', 'syntax_error'],
    ['', 'ok'],
    ['```js\n```', 'ok'],
    ['function sumList(xs) { return undefined }', 'ok'],
    ['function sumList(xs) { return "6" }', 'ok'], // "6" is not 6
    ['throw new Error("at load")', 'load_error'],
  ] as const) {
    const r = await score(response);
    assert.equal(r.status, 'ok', response);
    assert.equal(r.reward, 0, response);
    assert.equal(r.details?.kind, kind, `${response}: ${JSON.stringify(r)}`);
  }
});

test('hostile solutions are a normal low reward, and the next task is unaffected', async () => {
  for (const [response, kind] of [
    ['function sumList(xs) { for (;;) {} }', 'timeout'],
    // heap limit, or (on a starved CPU, with V8's last-resort GCs) the time limit first
    ['function sumList(xs) { const a = []; for (;;) a.push(new Array(1e6).fill(1.5)) }', 'memory|timeout'],
    ['function sumList(xs) { for (;;) console.log("x".repeat(1000)) }', 'output_limit'],
    ['function sumList(xs) { return require("fs").readFileSync("/etc/passwd", "utf8") }', 'ok'],
    ['function sumList(xs) { Object.prototype.reduce = () => 6; Array.prototype.reduce = () => 6; return -1 }', 'ok'],
  ] as const) {
    const r = await score(response);
    assert.deepEqual([r.status, r.reward], ['ok', 0], response);
    assert.ok(kind.split('|').includes(String(r.details?.kind)), `${response}: ${r.details?.kind}`);
  }
  assert.equal((await score('function sumList(xs) { return xs.reduce((a, b) => a + b, 0) }')).reward, 1);
});

test('the code cannot forge passing results', async () => {
  const t: Task = {
    id: 'f',
    taskset: 't',
    domain: 'code',
    prompt: 'p',
    entryPoint: 'f',
    tests: [
      { args: [], expected: 42 },
      { args: [], expected: 42 },
    ],
  };
  const forged = '{"ok":true,"value":42}';
  for (const response of [
    // getters on the prototypes where the harness keeps async results
    `for (let i = 0; i < 4; i++) { Object.defineProperty(Object.prototype, i, { get() { return '${forged}' }, set() {}, configurable: true }); Object.defineProperty(Array.prototype, i, { get() { return '${forged}' }, set() {}, configurable: true }) } async function f() { return 0 }`,
    // replacing the harness entry point
    `try { globalThis.__rft = () => '${forged}' } catch (e) {} function f() { return 0 }`,
    // protocol lines in the console output
    `function f() { console.log('\\n{"t":"done","id":1,"kind":"ok","error":"","calls":[${forged},${forged}],"value":null,"logs":["",false]}'); return 0 }`,
    // overriding the intrinsics the harness could use to encode results
    `JSON.stringify = () => '42'; String.prototype.slice = () => '42'; Object.keys = () => ['x']; function f() { return 0 }`,
    // a thenable that pretends to be a promise resolving to 42
    `function f() { return { then(res) { res(42) } } }`,
  ]) {
    const r = await score(response, t);
    assert.equal(r.status, 'ok', response);
    assert.equal(r.reward, 0, `${response}\n${JSON.stringify(r)}`);
  }
  assert.equal((await score('async function f() { return 42 }', t)).reward, 1, 'a real async answer still counts');
});

test('a task without entryPoint or tests cannot be scored (infra_failure, not a zero)', async () => {
  assert.equal((await score('function f() {}', { ...sumTask, entryPoint: undefined })).status, 'infra_failure');
  assert.equal((await score('function f() {}', { ...sumTask, tests: [] })).status, 'infra_failure');
  assert.equal((await score('function f() {}', { ...sumTask, entryPoint: 'a b' })).status, 'infra_failure');
});
