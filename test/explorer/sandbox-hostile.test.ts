// The hostile suite: model-written programs that try to get out of the sandbox or bring it down.
// Each one runs through the code reward (runCodeTests) on a shared pool, and must be contained:
// the secret file not read, the canary file not written, no connection to the host's server, the
// host's globals and env unchanged; and scored as a normal low reward (status ok), never as an
// infrastructure failure. The process-level layers are tested on their own in sandbox-layers.test.ts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Task } from '../../backend/core/types.js';
import { runCodeTests } from '../../backend/explorer/rewards/code_tests.js';
import { SandboxPool } from '../../backend/explorer/sandbox/index.js';
import type { RewardResult } from '../../backend/explorer/workflow.js';

const SECRET = `secret-${randomBytes(12).toString('hex')}`;
const dir = mkdtempSync(join(tmpdir(), 'rft-hostile-'));
const secretFile = join(dir, 'secret.txt');
const canary = join(dir, 'canary.txt');
let port = 0;
let connections = 0;
const server = createServer((s) => {
  connections++;
  s.destroy();
});
const pool = new SandboxPool({ workers: 2, timeoutMs: 600, killGraceMs: 400 });

const snapshot = () => ({
  objectProto: Object.getOwnPropertyNames(Object.prototype).sort(),
  arrayProto: Object.getOwnPropertyNames(Array.prototype).sort(),
  functionProto: Object.getOwnPropertyNames(Function.prototype).sort(),
  globals: Object.getOwnPropertyNames(globalThis).sort(),
  env: JSON.stringify(process.env),
  cwd: process.cwd(),
});
let before0: ReturnType<typeof snapshot>;

before(async () => {
  writeFileSync(secretFile, SECRET);
  process.env.RFT_HOSTILE_SECRET = SECRET;
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  port = (server.address() as AddressInfo).port;
  before0 = snapshot();
  await pool.warm();
});

after(async () => {
  await pool.close();
  server.close();
  delete process.env.RFT_HOSTILE_SECRET;
  rmSync(dir, { recursive: true, force: true });
});

/** A code task whose one test no contained program can pass: f() must return the secret. */
const task = (): Task => ({
  id: 'h',
  taskset: 'hostile',
  domain: 'code',
  prompt: 'p',
  entryPoint: 'f',
  tests: [{ args: [], expected: SECRET }],
});

interface Hostile {
  name: string;
  /** Body of `function f() { ... }`, or a whole program with `raw`. */
  code: string;
  raw?: boolean;
  /** Acceptable run kinds (details.kind). */
  kinds: string[];
}

const F = (s: string) => JSON.stringify(s);
const P: Hostile[] = [
  // file system, by every route the language offers
  { name: 'fs via require', code: `return require('fs').readFileSync(${F(secretFile)}, 'utf8')`, kinds: ['ok'] },
  {
    name: 'fs via process.mainModule',
    code: `return process.mainModule.require('fs').readFileSync(${F(secretFile)}, 'utf8')`,
    kinds: ['ok'],
  },
  { name: 'fs via process.binding', code: `return process.binding('fs')`, kinds: ['ok'] },
  { name: 'fs write via require', code: `require('fs').writeFileSync(${F(canary)}, 'x'); return 1`, kinds: ['ok'] },
  {
    name: 'fs via dynamic import',
    code: `return import('node:fs').then((m) => m.readFileSync(${F(secretFile)}, 'utf8'))`,
    kinds: ['ok'],
  },
  {
    name: 'fs via import() at top level',
    raw: true,
    code: `import('fs').then((m) => m.writeFileSync(${F(canary)}, 'x')); function f() { return 1 }`,
    kinds: ['ok'],
  },
  {
    name: 'fs via a static import',
    raw: true,
    code: `import fs from 'fs'; function f() { return fs.readFileSync(${F(secretFile)}, 'utf8') }`,
    kinds: ['syntax_error'],
  },
  // escapes from the vm context to the worker's realm
  {
    name: 'constructor chain to process',
    code: `return this.constructor.constructor('return process')().mainModule.require('fs').readFileSync(${F(secretFile)}, 'utf8')`,
    kinds: ['ok'],
  },
  {
    name: 'global constructor chain',
    raw: true,
    code: `const p = globalThis.constructor.constructor('return process')(); function f() { return p.env.RFT_HOSTILE_SECRET }`,
    kinds: ['load_error'],
  },
  {
    name: 'Function constructor',
    code: `return (function () {}).constructor('return this')().process.env.RFT_HOSTILE_SECRET`,
    kinds: ['ok'],
  },
  {
    name: 'async Function constructor',
    code: `return (async function () {}).constructor('return process')()`,
    kinds: ['ok'],
  },
  { name: 'eval', code: `return eval('process.env.RFT_HOSTILE_SECRET')`, kinds: ['ok'] },
  {
    name: 'Error.prepareStackTrace frames',
    code: `Error.prepareStackTrace = (e, frames) => frames.map((fr) => { try { const t = fr.getThis(); const fn = fr.getFunction(); return (t && t.process) || (fn && fn.constructor && fn.constructor('return process')()) } catch (x) { return null } }).find((x) => x);
      const p = new Error().stack; return p && p.env ? p.env.RFT_HOSTILE_SECRET : typeof p`,
    kinds: ['ok'],
  },
  {
    name: 'stack overflow inside prepareStackTrace',
    code: `Error.prepareStackTrace = function g() { return g() }; return new Error().stack`,
    kinds: ['ok'],
  },
  {
    name: 'Proxy around the global',
    code: `const p = new Proxy(globalThis, { get: (t, k) => (k in t ? t[k] : undefined) }); return p.process.env.RFT_HOSTILE_SECRET`,
    kinds: ['ok'],
  },
  {
    name: 'Symbol and Reflect probing of the global',
    code: `const ks = Reflect.ownKeys(globalThis).map(String); for (const k of ks) { const v = globalThis[k]; if (v && v.env) return v.env.RFT_HOSTILE_SECRET } return ks.join(',')`,
    kinds: ['ok'],
  },
  // env, network, processes, threads
  { name: 'env vars', code: `return process.env.RFT_HOSTILE_SECRET`, kinds: ['ok'] },
  {
    name: 'fetch to the host',
    code: `return fetch('http://127.0.0.1:${'${PORT}'}/').then((r) => r.text())`,
    kinds: ['ok'],
  },
  {
    name: 'net.connect to the host',
    code: `require('net').connect(${'${PORT}'}, '127.0.0.1'); return 1`,
    kinds: ['ok'],
  },
  {
    name: 'dns lookup',
    code: `return new Promise((res) => require('dns').lookup('example.com', (e, a) => res(a)))`,
    kinds: ['ok'],
  },
  {
    name: 'child_process spawn',
    code: `require('child_process').execSync('touch ${'${CANARY}'}'); return 1`,
    kinds: ['ok'],
  },
  { name: 'fork bomb', code: `const cp = require('child_process'); for (;;) cp.fork(__filename)`, kinds: ['ok'] },
  {
    name: 'worker_threads',
    code: `const { Worker } = require('worker_threads'); new Worker('require("fs").writeFileSync(' + ${F(JSON.stringify(canary))} + ', "x")', { eval: true }); return 1`,
    kinds: ['ok'],
  },
  { name: 'Worker global', code: `new Worker('x'); return 1`, kinds: ['ok'] },
  { name: 'process.exit', code: `process.exit(0)`, kinds: ['ok'] },
  { name: 'process.kill of the parent', code: `process.kill(process.ppid, 'SIGKILL')`, kinds: ['ok'] },
  // resources
  { name: 'infinite loop', code: `for (;;) {}`, kinds: ['timeout'] },
  {
    name: 'infinite loop at top level',
    raw: true,
    code: `while (true) {} function f() { return 1 }`,
    kinds: ['timeout'],
  },
  { name: 'async infinite loop', code: `return (async () => { for (;;) await null })()`, kinds: ['timeout'] },
  {
    name: 'microtask loop after returning',
    code: `(async () => { for (;;) await 0 })(); return 1`,
    kinds: ['timeout'],
  },
  { name: 'a promise that never settles', code: `return new Promise(() => {})`, kinds: ['ok'] },
  {
    name: 'timers that outlive the call',
    code: `setTimeout(() => require('fs').writeFileSync(${F(canary)}, 'x'), 50); return 1`,
    kinds: ['ok'],
  },
  {
    name: 'setInterval / queueMicrotask / setImmediate',
    code: `setInterval(() => {}, 1); queueMicrotask(() => {}); setImmediate(() => {}); return 1`,
    kinds: ['ok'],
  },
  {
    name: 'WeakRef / FinalizationRegistry callbacks',
    code: `new FinalizationRegistry(() => {}).register({}, 1); return new WeakRef({})`,
    kinds: ['ok'],
  },
  {
    name: 'Atomics.wait blocks the thread',
    code: `Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); return 1`,
    kinds: ['timeout'],
  },
  {
    name: 'Atomics.waitAsync',
    code: `return Atomics.waitAsync(new Int32Array(new SharedArrayBuffer(4)), 0, 0).value`,
    kinds: ['ok'],
  },
  // under heavy load a bomb may hit the time limit before the heap limit: either is the code's fault
  {
    name: 'heap memory bomb',
    code: `const a = []; for (;;) a.push(new Array(1e6).fill(1.5))`,
    kinds: ['memory', 'timeout'],
  },
  { name: 'string memory bomb', code: `let s = 'x'; for (;;) s += s; return s`, kinds: ['ok', 'memory', 'timeout'] },
  {
    name: 'ArrayBuffer memory bomb',
    code: `const b = []; for (;;) b.push(new ArrayBuffer(1e8))`,
    kinds: ['ok', 'memory', 'timeout'],
  },
  {
    name: 'SharedArrayBuffer bomb',
    code: `const b = []; for (;;) b.push(new SharedArrayBuffer(1e8))`,
    kinds: ['ok', 'memory', 'timeout'],
  },
  {
    name: 'WebAssembly',
    code: `return new WebAssembly.Instance(new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))).exports`,
    kinds: ['ok'],
  },
  { name: 'deep recursion', code: `const g = (n) => g(n + 1) + 1; return g(0)`, kinds: ['ok'] },
  {
    name: 'huge console output',
    code: `for (;;) console.log('spam spam spam spam spam spam spam spam spam')`,
    kinds: ['output_limit', 'timeout'],
  },
  {
    name: 'huge return value',
    code: `return 'x'.repeat(50_000_000)`,
    kinds: ['ok', 'output_limit', 'memory', 'timeout'],
  },
  {
    name: 'huge array return',
    code: `return new Array(5_000_000).fill(12345)`,
    kinds: ['ok', 'output_limit', 'timeout'],
  },
  { name: 'cyclic return value', code: `const o = {}; o.self = o; return o`, kinds: ['ok', 'timeout'] },
  {
    name: 'deeply nested return value',
    code: `let o = null; for (let i = 0; i < 100000; i++) o = { o }; return o`,
    kinds: ['ok', 'timeout'],
  },
  {
    name: 'getter that throws during serialisation',
    code: `return { get x() { throw new Error('boom') } }`,
    kinds: ['ok'],
  },
  { name: 'getter that loops during serialisation', code: `return { get x() { for (;;) {} } }`, kinds: ['timeout'] },
  {
    name: 'Proxy return value with hostile traps',
    code: `return new Proxy({}, { ownKeys() { throw 1 }, getPrototypeOf() { for (;;) {} } })`,
    kinds: ['ok', 'timeout'],
  },
  {
    name: 'throwing a non-Error',
    code: `throw { toString() { throw new Error('no') }, get message() { throw 2 } }`,
    kinds: ['ok'],
  },
  { name: 'throwing a Proxy', code: `throw new Proxy({}, { get() { for (;;) {} } })`, kinds: ['ok', 'timeout'] },
  { name: 'throwing a Symbol / undefined / null', code: `throw Symbol('s')`, kinds: ['ok'] },
  // forging results and polluting the harness
  {
    name: 'prototype pollution inside the sandbox',
    code: `Object.prototype.polluted = 'yes'; Array.prototype.push = () => { throw 1 }; JSON.stringify = () => ${F(JSON.stringify(SECRET))}; Object.keys = () => []; return 'polluted'`,
    kinds: ['ok'],
  },
  {
    name: 'overwriting the harness entry',
    code: `globalThis.__rft = () => '{"ok":true,"value":"x"}'; Object.defineProperty(globalThis, '__rft', { value: 1 }); return 1`,
    kinds: ['ok'],
  },
  {
    name: 'shadowing the harness with let',
    raw: true,
    code: `let __rft = () => 1; function f() { return 1 }`,
    kinds: ['syntax_error', 'load_error'],
  },
  {
    name: 'forging a settled result through Object.prototype',
    code: `for (let i = 0; i < 4; i++) Object.defineProperty(Object.prototype, i, { get() { return '{"ok":true,"value":' + JSON.stringify(${F(SECRET)}.replace(/./g, '?')) + '}' }, set() {} }); return Promise.resolve(0)`,
    kinds: ['ok'],
  },
  {
    name: 'injecting protocol lines via console',
    code: `console.log('\\n{"t":"done","id":1,"kind":"ok","error":"","calls":[{"ok":true,"value":1}],"value":null,"logs":["",false]}\\n'); return 0`,
    kinds: ['ok'],
  },
  {
    name: '__proto__ key in the result',
    code: `return JSON.parse('{"__proto__": {"polluted": "host"}, "constructor": {"prototype": {"polluted": "host"}}}')`,
    kinds: ['ok'],
  },
  {
    name: 'a huge program',
    raw: true,
    code: `function f() { return 1 }\n` + '// padding\n'.repeat(8000),
    kinds: ['ok'],
  },
];

const fill = (s: string) => s.replaceAll('${PORT}', String(port)).replaceAll('${CANARY}', canary);

test(`${P.length} hostile programs are contained and scored as low rewards`, async (t) => {
  assert.ok(P.length >= 30);
  const results = new Map<string, RewardResult>();
  // two at a time, like the pool
  const queue = [...P];
  await Promise.all(
    [0, 1].map(async () => {
      for (let h = queue.shift(); h; h = queue.shift()) {
        const code = h.raw ? fill(h.code) : `function f() {\n${fill(h.code)}\n}`;
        results.set(h.name, await runCodeTests(task(), '```js\n' + code + '\n```', pool));
        if (process.env.RFT_HOSTILE_DEBUG) console.error(h.name, JSON.stringify(results.get(h.name)));
      }
    }),
  );
  for (const h of P) {
    await t.test(h.name, () => {
      const r = results.get(h.name)!;
      assert.equal(r.status, 'ok', `${h.name}: ${r.reason ?? ''}`);
      assert.equal(r.reward, 0);
      assert.ok(h.kinds.includes(String(r.details?.kind)), `${h.name}: kind ${r.details?.kind} (${r.details?.error})`);
      assert.ok(!JSON.stringify(r).includes(SECRET), 'the secret leaked into the result');
    });
  }
  await t.test('the host is unaffected', async () => {
    assert.equal(existsSync(canary), false, 'the canary file was written');
    assert.equal(connections, 0, 'the host server was reached');
    assert.deepEqual(snapshot(), before0, 'host globals, prototypes, env or cwd changed');
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    // and the pool still works, with fresh contexts (no pollution carried between jobs)
    const ok = await runCodeTests(
      {
        ...task(),
        tests: [
          { args: [2, 3], expected: 5 },
          { args: [], expected: 'clean' },
        ],
      },
      'function f(a, b) { return a === undefined ? (({}).polluted === undefined && [].push(1) === 1 ? "clean" : "dirty") : a + b }',
      pool,
    );
    assert.deepEqual([ok.status, ok.reward], ['ok', 1], JSON.stringify(ok));
  });
});

test('a __proto__ key in a result stays a plain key on the host', async () => {
  const r = await pool.run({
    code: 'function f() { return JSON.parse(\'{"__proto__": {"polluted": 1}, "a": 1}\') }',
    entryPoint: 'f',
    args: [[]],
  });
  assert.equal(r.status, 'ok');
  if (r.status !== 'ok') return;
  const c = r.calls[0]!;
  assert.ok(c.ok);
  if (!c.ok) return;
  const v = c.value as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(v), null);
  assert.deepEqual(Object.keys(v).sort(), ['__proto__', 'a']);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal((v as { polluted?: unknown }).polluted, undefined);
});
