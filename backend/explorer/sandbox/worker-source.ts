// The program a sandbox worker process runs (passed with `node -e`, so the worker needs no file
// read permission at all). It is plain CommonJS JavaScript kept as a string, because it runs under
// Node's permission model with no loader, and must survive bundling unchanged.
//
// Protocol (newline-delimited JSON): the worker prints {"t":"ready"} once, then for every job line
// {"id","code","entryPoint"?,"args"?,"timeoutMs","maxOutputBytes"} it prints {"t":"start","id"}
// and then one {"t":"done",...} line. Jobs are handled synchronously, one at a time.
//
// Untrusted code runs in a fresh vm context per job. The rule that keeps the worker's own realm
// safe: the worker never touches a value that came out of the context (no property reads, no
// instanceof, no String()) outside a timed runInContext call. Values go back in through the
// harness's `store` function and come out only as primitive strings built by the harness, which
// captured every intrinsic it uses before the untrusted code ran.
export const WORKER_SOURCE =
  String.raw`'use strict';
const vm = require('node:vm');
const { types } = require('node:util');

// Unhandled rejections from the untrusted context must not kill the worker between jobs.
process.on('unhandledRejection', () => {});

// vm's timeout error is created in the context's realm (with an own data property code), so it is
// recognised by hook-free checks only: the untrusted code can at worst fake its own timeout.
function isTimeout(e) {
  if (typeof e !== 'object' || e === null || types.isProxy(e) || !types.isNativeError(e)) return false;
  const d = Object.getOwnPropertyDescriptor(e, 'code');
  return !!d && d.value === 'ERR_SCRIPT_EXECUTION_TIMEOUT';
}

// Runs in the fresh context before the untrusted code; its value is the harness's store function.
const BOOT = new vm.Script(String.raw` +
  '`' +
  String.raw`(() => {
  'use strict';
  const G = globalThis;
  const JSONparse = JSON.parse, JSONstringify = JSON.stringify, keys = Object.keys, isArray = Array.isArray;
  const apply = Reflect.apply, getProto = Object.getPrototypeOf, defineProperty = Object.defineProperty;
  const ObjectProto = Object.prototype, PromiseProto = Promise.prototype, then = Promise.prototype.then;
  const StringC = String, isFiniteN = Number.isFinite, sliceS = String.prototype.slice;
  // Nothing may run after a call returns: no timers exist here; remove the other async callbacks.
  delete G.FinalizationRegistry; delete G.WeakRef;
  if (typeof Atomics === 'object') delete Atomics.waitAsync;
  let MAX = 65536, ENTRY = '', FN, ARGS = [], slot, logs = '', truncated = false;
  // Null prototype: a setter or getter the code puts on Array/Object.prototype cannot forge results.
  const settled = Object.create(null);
  const LIMIT = { limit: true };
  const cut = (s, n) => (s.length > n ? apply(sliceS, s, [0, n]) : s);

  // Encodes any value as JSON text of a tagged tree, by string concatenation only.
  function enc(v, depth, budget) {
    if (++budget.n > 100000 || depth > 64) throw LIMIT;
    switch (typeof v) {
      case 'undefined': return '{"$":"undefined"}';
      case 'boolean': return v ? 'true' : 'false';
      case 'number':
        if (isFiniteN(v)) return '' + (v === 0 ? 0 : v);
        return v !== v ? '{"$":"NaN"}' : v > 0 ? '{"$":"Infinity"}' : '{"$":"-Infinity"}';
      case 'bigint': return '{"$":"bigint","v":"' + v + '"}';
      case 'string': if (v.length > MAX) throw LIMIT; return JSONstringify(v);
      case 'symbol': return '{"$":"symbol"}';
      case 'function': return '{"$":"function"}';
    }
    if (v === null) return 'null';
    let s;
    if (isArray(v)) {
      const n = v.length;
      if (!(n <= 100000)) throw LIMIT;
      s = '[';
      for (let i = 0; i < n; i++) { s += (i ? ',' : '') + enc(v[i], depth + 1, budget); if (s.length > MAX) throw LIMIT; }
      return s + ']';
    }
    const p = getProto(v);
    if (p === PromiseProto) return '{"$":"Promise"}';
    const ks = keys(v);
    s = '{"$o":{';
    for (let i = 0; i < ks.length; i++) {
      const k = ks[i];
      s += (i ? ',' : '') + JSONstringify(StringC(k)) + ':' + enc(v[k], depth + 1, budget);
      if (s.length > MAX) throw LIMIT;
    }
    return s + '}}';
  }
  function describe(e) {
    try {
      if ((typeof e === 'object' || typeof e === 'function') && e !== null) return cut(StringC(e.name) + ': ' + StringC(e.message), 500);
      return cut(StringC(e), 500);
    } catch (_) { return '[unprintable thrown value]'; }
  }
  function fail(kind, msg) { return '{"ok":false,"kind":"' + kind + '","error":' + JSONstringify(cut(msg, 500)) + '}'; }
  function okValue(v) {
    try { return '{"ok":true,"value":' + enc(v, 0, { n: 0 }) + '}'; }
    catch (e) { return e === LIMIT ? fail('output_limit', 'return value too large') : fail('threw', 'while serialising the result: ' + describe(e)); }
  }
  function show(v) {
    if (typeof v === 'string') return v;
    try { return enc(v, 0, { n: 0 }); } catch (_) { return '[unprintable]'; }
  }
  function log() {
    if (truncated) throw new Error('output limit reached');
    let line = '';
    for (let i = 0; i < arguments.length; i++) line += (i ? ' ' : '') + show(arguments[i]);
    if (logs.length + line.length + 1 > MAX) { truncated = true; logs += cut(line, MAX - logs.length); throw new Error('output limit reached'); }
    logs += line + '\n';
  }
  defineProperty(G, 'console', { value: { log, info: log, warn: log, error: log, debug: log }, writable: true, configurable: true });

  // op 0: start (slot = setup JSON); 1: call test idx; 2: collect its settled async result;
  // 3: describe the thrown value in slot; 4: encode the value in slot; 5: logs; 6: set the entry
  // function (once, looked up by name in the global scope, so const/let/class bindings count too).
  let started = false;
  function op(code, idx) {
    if (code === 0) { if (started) return ''; started = true; const s = JSONparse(slot); MAX = s.max; ENTRY = s.entry; ARGS = s.args; slot = undefined; return ''; }
    if (code === 1) {
      const i = idx;
      const fn = FN;
      if (typeof fn !== 'function') return fail('missing', 'no function named ' + ENTRY);
      let r;
      try { r = apply(fn, undefined, ARGS[i]); } catch (e) { return e === LIMIT ? fail('output_limit', 'output limit') : fail('threw', describe(e)); }
      if ((typeof r === 'object' || typeof r === 'function') && r !== null && getProto(r) === PromiseProto) {
        settled[i] = undefined;
        apply(then, r, [(v) => { settled[i] = okValue(v); }, (e) => { settled[i] = fail('threw', describe(e)); }]);
        return '{"pending":true}';
      }
      return okValue(r);
    }
    if (code === 6) { if (FN === undefined) FN = idx; return ''; }
    if (code === 2) { const s = settled[idx]; return s === undefined ? fail('pending', 'the returned promise did not settle') : s; }
    if (code === 3) return describe(slot);
    if (code === 4) return okValue(slot);
    return JSONstringify(logs) + (truncated ? ',true' : ',false');
  }
  defineProperty(G, '__rft', { value: op, writable: false, configurable: false, enumerable: false });
  return (v) => { slot = v; };
})()` +
  '`' +
  String.raw`, { filename: 'sandbox-harness.js' });
const START = new vm.Script('__rft(0)');
// Test index baked into the script, so the untrusted code cannot shift which result is which.
const CALLS = [], COLLECTS = [];
const callScript = (i) => CALLS[i] || (CALLS[i] = new vm.Script('__rft(1,' + i + ')'));
const collectScript = (i) => COLLECTS[i] || (COLLECTS[i] = new vm.Script('__rft(2,' + i + ')'));
const DESCRIBE = new vm.Script('__rft(3)'), ENCODE = new vm.Script('__rft(4)'), LOGS = new vm.Script('__rft(5)');

function send(s) { process.stdout.write(s + '\n'); }

function runJob(job) {
  const deadline = Date.now() + job.timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  // A null-prototype sandbox object: with a plain {} the global's inherited 'constructor' would be
  // the worker realm's Object, and this.constructor.constructor('return process')() would escape.
  const ctx = vm.createContext(Object.create(null), { codeGeneration: { strings: false, wasm: false }, microtaskMode: 'afterEvaluate' });
  const store = BOOT.runInContext(ctx);
  const tests = Array.isArray(job.args) ? job.args : null;
  store(JSON.stringify({ max: job.maxOutputBytes, entry: String(job.entryPoint || ''), args: tests || [] }));
  START.runInContext(ctx);
  let kind = 'ok', error = '', value = null;
  const calls = [];
  // Runs one harness op under the job's remaining time; returns its string or null on timeout.
  const timed = (script) => {
    try { return script.runInContext(ctx, { timeout: left() }); }
    catch (e) { if (isTimeout(e)) { kind = 'timeout'; return null; } kind = 'crash'; error = 'harness failed'; return null; }
  };
  let script = null;
  try { script = new vm.Script(String(job.code), { filename: 'solution.js' }); }
  catch (e) { kind = 'syntax_error'; error = String(e && e.message).slice(0, 500); }
  if (script) {
    let completion;
    try { completion = script.runInContext(ctx, { timeout: left() }); }
    catch (e) {
      if (isTimeout(e)) kind = 'timeout';
      else { kind = 'load_error'; store(e); const d = timed(DESCRIBE); error = d === null ? 'unprintable' : d; }
    }
    if (kind === 'ok' && !tests) { store(completion); value = timed(ENCODE); }
    if (kind === 'ok' && tests) {
      // The name is checked to be an identifier before it goes into source text.
      const name = String(job.entryPoint || '');
      let lookup = null;
      if (/^[A-Za-z_$][\w$]*$/.test(name)) {
        try { lookup = new vm.Script('__rft(6, typeof ' + name + " === 'function' ? " + name + ' : undefined)'); } catch (e) { lookup = null; }
      }
      if (lookup) timed(lookup);
      for (let i = 0; i < tests.length; i++) {
        if (kind === 'timeout') { calls.push('{"ok":false,"kind":"timeout","error":"time budget used up"}'); continue; }
        let r = timed(callScript(i));
        if (r === '{"pending":true}') r = timed(collectScript(i));
        calls.push(r === null ? '{"ok":false,"kind":"timeout","error":"timed out"}' : r);
      }
    }
  }
  const lg = timed(LOGS);
  if (lg !== null && lg.endsWith(',true') && (kind === 'ok' || kind === 'load_error')) kind = 'output_limit';
  let line = '{"t":"done","id":' + job.id + ',"kind":"' + kind + '","error":' + JSON.stringify(error) +
    ',"calls":[' + calls.join(',') + '],"value":' + (value === null ? 'null' : value) + ',"logs":[' + (lg === null ? '"",false' : lg) + ']}';
  if (line.length > 4 * job.maxOutputBytes + 4096) {
    line = '{"t":"done","id":' + job.id + ',"kind":"output_limit","error":"result too large","calls":[],"value":null,"logs":["",true]}';
  }
  send(line);
}

let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buf += chunk;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const text = buf.slice(0, i);
    buf = buf.slice(i + 1);
    let job;
    try { job = JSON.parse(text); } catch (e) { send('{"t":"error","error":"bad job line"}'); continue; }
    send('{"t":"start","id":' + Number(job.id) + '}');
    runJob(job);
  }
});
process.stdin.on('end', () => process.exit(0));
send('{"t":"ready"}');
`;
