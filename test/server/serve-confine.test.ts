// Every path in a request stays inside the workspace: export cannot write elsewhere (traversal,
// absolute paths, a link pointing out), buffer/open refuses a foreign SQLite database untouched and
// never creates a file, run control and validation refuse files outside the workspace.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import Database from 'better-sqlite3';
import { makeBuffer } from '../../tools/make-buffer.js';
import { spawnServe, type Served } from '../../tools/spawn-serve.js';
import { ErrorCodes } from '../../backend/core/protocol.js';
import { RunRegistry } from '../../backend/buffer/runs.js';

const root = mkdtempSync(join(tmpdir(), 'rft-confine-'));
const ws = join(root, 'ws');
const outside = join(root, 'home');
let s: Served;
let inner: string;
let foreign: string;
let outerBuffer: string;

const sha = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex');
/** Rejects with the Forbidden code and a message matching `re`. */
async function forbidden(p: Promise<unknown>, re: RegExp): Promise<void> {
  await assert.rejects(p, (e: { code?: number; message: string }) => {
    assert.equal(e.code, ErrorCodes.Forbidden, e.message);
    assert.match(e.message, re);
    return true;
  });
}

before(async () => {
  mkdirSync(join(ws, '.rft', 'runs', 'r1'), { recursive: true });
  mkdirSync(outside, { recursive: true });
  inner = await makeBuffer(10, join(ws, '.rft', 'runs', 'r1'));
  outerBuffer = await makeBuffer(10, mkdtempSync(join(outside, 'buf-')));
  // A browser's cookie database, inside the workspace even: still not a buffer.
  foreign = join(ws, 'cookies.sqlite');
  const db = new Database(foreign);
  db.exec(
    "CREATE TABLE moz_cookies (id INTEGER PRIMARY KEY, name TEXT, value TEXT); INSERT INTO moz_cookies (name, value) VALUES ('sid', 'secret')",
  );
  db.close();
  symlinkSync(outside, join(ws, 'escape'));
  writeFileSync(join(outside, 'evil.rft.yaml'), 'name: x\n');
  writeFileSync(join(outside, 'tasks.jsonl'), '{"id":"a","prompt":"p","answer":"1"}\n');
  s = spawnServe(['--workspace', ws]);
});
after(async () => {
  await s.close();
});

test('buffer/export cannot write outside the workspace: ../ traversal, an absolute path, a link out', async () => {
  await s.request('buffer/open', { path: inner });
  const rel = relative(ws, join(outside, 'bashrc'));
  assert.ok(rel.startsWith('..'));
  await forbidden(s.request('buffer/export', { file: rel }), /outside the workspace/);
  await forbidden(
    s.request('buffer/export', { file: '../../../../../../../../' + join(outside, 'bashrc') }),
    /outside the workspace/,
  );
  await forbidden(s.request('buffer/export', { file: join(outside, 'bashrc') }), /outside the workspace/);
  await forbidden(s.request('buffer/export', { file: 'escape/bashrc' }), /outside the workspace/);
  assert.equal(existsSync(join(outside, 'bashrc')), false, 'nothing was written outside');
  // Inside the workspace it works, relative to the workspace (not the server's cwd).
  const r = await s.request('buffer/export', { file: 'out.jsonl' });
  assert.equal(r.file, join(ws, 'out.jsonl'));
  assert.equal(readFileSync(join(ws, 'out.jsonl'), 'utf8').trim().split('\n').length, 10);
});

test('buffer/open refuses a foreign SQLite database and leaves it byte for byte untouched', async () => {
  const before = sha(foreign);
  const files = readdirSync(ws).sort();
  await forbidden(s.request('buffer/open', { path: foreign }), /not an RFT Studio buffer.*left untouched/);
  await forbidden(s.request('buffer/open', { path: 'cookies.sqlite' }), /not an RFT Studio buffer/);
  assert.equal(sha(foreign), before);
  assert.deepEqual(readdirSync(ws).sort(), files, 'no journal or table files added');
  const db = new Database(foreign, { readonly: true });
  assert.deepEqual(
    (db.prepare("SELECT name FROM sqlite_master WHERE type='table'").all() as { name: string }[]).map((t) => t.name),
    ['moz_cookies'],
  );
  db.close();
});

test('buffer/open never creates a file, and refuses buffers outside the workspace', async () => {
  await assert.rejects(
    s.request('buffer/open', { path: 'new.db' }),
    (e: { code?: number; message: string }) =>
      e.code === ErrorCodes.NotFound && /existing buffers only/.test(e.message),
  );
  assert.equal(existsSync(join(ws, 'new.db')), false);
  await forbidden(s.request('buffer/open', { path: join(outside, 'made.db') }), /outside the workspace/);
  assert.equal(existsSync(join(outside, 'made.db')), false);
  await forbidden(s.request('buffer/open', { path: outerBuffer }), /outside the workspace/);
  await forbidden(
    s.request('buffer/open', { path: 'escape/' + relative(outside, outerBuffer) }),
    /outside the workspace/,
  );
  await forbidden(
    s.request('buffer/open', { path: 'sqlite:.rft/runs/r1/buffer.db?synchronous=off' }),
    /options in a buffer path/,
  );
  await forbidden(s.request('buffer/open', { path: 'postgres://u@db.example/x' }), /not one of this workspace's runs/);
  // The project's own buffer opens (by path relative to the workspace).
  const o = await s.request('buffer/open', { path: '.rft/runs/r1/buffer.db' });
  assert.equal(o.counts.usual, 10);
});

test('a run whose registry record was edited to point outside is refused', async () => {
  const reg = await RunRegistry.open(ws);
  const r = await reg.create({ name: 'edited', config: {}, dbPath: outerBuffer });
  await forbidden(s.request('buffer/open', { runId: r.id }), /field 'runId'.*outside the workspace/);
  // Edited to a new file in the workspace but outside .rft/: not created.
  const w = await reg.create({ name: 'edited2', config: {}, dbPath: join(ws, 'made-by-edit.db') });
  await assert.rejects(s.request('buffer/open', { runId: w.id }), /existing buffers only/);
  assert.equal(existsSync(join(ws, 'made-by-edit.db')), false);
});

test('a run that has not written its buffer yet: only that file, in .rft/, is created', async () => {
  const reg = await RunRegistry.open(ws);
  const r = await reg.create({ name: 'fresh', config: {} });
  assert.equal(existsSync(r.dbPath), false);
  const o = await s.request('buffer/open', { runId: r.id });
  assert.equal(o.counts.usual, 0);
  assert.equal(o.path, r.dbPath);
  assert.ok(existsSync(r.dbPath));
});

test('a run whose buffer is mid-creation (file made, no schema yet) opens; a foreign database in its place does not', async () => {
  const reg = await RunRegistry.open(ws);
  // What the run process leaves between `new Database(file)` and writing its schema: a file with no tables.
  const made = await reg.create({ name: 'making', config: {} });
  mkdirSync(join(made.dbPath, '..'), { recursive: true });
  new Database(made.dbPath).pragma('journal_mode = WAL');
  const o = await s.request('buffer/open', { runId: made.id });
  assert.equal(o.counts.usual, 0);
  const empty = await reg.create({ name: 'empty-file', config: {} });
  mkdirSync(join(empty.dbPath, '..'), { recursive: true });
  writeFileSync(empty.dbPath, '');
  assert.equal((await s.request('buffer/open', { runId: empty.id })).counts.usual, 0);
  // A run record whose buffer file holds someone else's tables is still refused, untouched.
  const odd = await reg.create({ name: 'odd', config: {} });
  mkdirSync(join(odd.dbPath, '..'), { recursive: true });
  const db = new Database(odd.dbPath);
  db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
  db.close();
  const before = sha(odd.dbPath);
  await forbidden(s.request('buffer/open', { runId: odd.id }), /not an RFT Studio buffer/);
  assert.equal(sha(odd.dbPath), before);
});

test('run control, config and taskset validation refuse files outside the workspace', async () => {
  await forbidden(
    s.request('runs/start', { configPath: '../home/evil.rft.yaml' }),
    /field 'configPath'.*outside the workspace/,
  );
  await forbidden(s.request('runs/start', { configPath: join(outside, 'evil.rft.yaml') }), /outside the workspace/);
  await forbidden(s.request('runs/start', { configPath: 'escape/evil.rft.yaml' }), /outside the workspace/);
  await forbidden(s.request('config/validate', { file: join(outside, 'evil.rft.yaml') }), /field 'file'/);
  await forbidden(s.request('taskset/validate', { file: join(outside, 'tasks.jsonl') }), /field 'file'/);
  await forbidden(
    s.request('taskset/watch', { files: ['ok.jsonl', join(outside, 'tasks.jsonl')] }),
    /field 'files\[1\]'/,
  );
  await forbidden(
    s.request('runs/evaluate', { checkpoint: join(outside, 'ckpt'), taskset: 'tasks.jsonl' }),
    /field 'checkpoint'/,
  );
});

test('the buffer given on the command line (--buffer) may lie outside: the user chose it', async () => {
  const t = spawnServe(['--workspace', ws, '--buffer', outerBuffer]);
  try {
    const c = await t.request('buffer/counts', {});
    assert.equal(c.usual, 10);
  } finally {
    await t.close();
  }
});
