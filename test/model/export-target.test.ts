// Exports never delete (issue 24): `rft model export --out DIR` refuses a non-empty folder and a file
// of that name; --force replaces only the files the export writes and keeps the user's others; every
// format writes beside the target and renames at the end, leaving no temp folder after a failure or
// a SIGTERM; a GGUF killed -9 while written leaves no truncated model.gguf; a read-only target is
// named.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeExport } from '../../backend/model/export/target.js';
import { makeHfModel } from '../../tools/hf-model.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'rft-export-target-'));
after(() => rmSync(root, { recursive: true, force: true }));
const ck = makeHfModel(join(root, 'llama'), {
  architecture: 'LlamaForCausalLM',
  tokenizer: 'llama3',
  hidden: 32,
  layers: 1,
  heads: 4,
  kvHeads: 2,
  intermediate: 48,
  tied: true,
});

function rft(...args: string[]): { out: string; code: number; err: string } {
  const r = spawnSync(process.execPath, ['bin/rft.mjs', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, RFT_FROM_SOURCE: '1' },
  });
  return { out: r.stdout, code: r.status ?? -1, err: r.stderr };
}
/** Temp names an export leaves beside `out` (none may survive it). */
const leftovers = (parent: string) => readdirSync(parent).filter((n) => n.includes('.tmp-'));
const userFolder = (name: string) => {
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'notes.md'), 'my notes\n');
  return d;
};

test('a non-empty folder is refused for hf, peft and gguf, naming it and --force; nothing in it changes', () => {
  const d = userFolder('notes-refused');
  for (const format of ['hf', 'peft', 'gguf']) {
    const r = rft('model', 'export', ck, '--format', format, '--out', d);
    assert.notEqual(r.code, 0, `${format}: ${r.out}`);
    assert.match(
      r.err,
      new RegExp(
        `${d}: the folder is not empty \\(notes\\.md\\): choose a new or empty folder, or pass --force to replace only the files this export writes`,
      ),
    );
  }
  assert.deepEqual(readdirSync(d), ['notes.md']);
  assert.equal(readFileSync(join(d, 'notes.md'), 'utf8'), 'my notes\n');
  assert.deepEqual(leftovers(root), []);
});

test("--force replaces only the export's own files: the user's notes stay (hf and gguf)", () => {
  const d = userFolder('notes-forced');
  writeFileSync(join(d, 'config.json'), '{"old": true}');
  const r = rft('model', 'export', ck, '--format', 'hf', '--out', d, '--force');
  assert.equal(r.code, 0, r.err);
  assert.equal(readFileSync(join(d, 'notes.md'), 'utf8'), 'my notes\n');
  assert.ok(existsSync(join(d, 'model.safetensors')));
  assert.match(
    readFileSync(join(d, 'config.json'), 'utf8'),
    /LlamaForCausalLM/,
    "the export's config.json replaced the old one",
  );
  const g = rft('model', 'export', ck, '--format', 'gguf', '--out', d, '--force');
  assert.equal(g.code, 0, g.err);
  assert.equal(readFileSync(join(d, 'model.gguf')).subarray(0, 4).toString('latin1'), 'GGUF');
  assert.equal(readFileSync(join(d, 'notes.md'), 'utf8'), 'my notes\n');
  assert.deepEqual(leftovers(root), []);
  // A folder of the user's where the export writes a file is not replaced, even with --force.
  const e = userFolder('notes-dir-clash');
  mkdirSync(join(e, 'model.gguf'));
  writeFileSync(join(e, 'model.gguf', 'keep.txt'), 'x');
  const c = rft('model', 'export', ck, '--format', 'gguf', '--out', e, '--force');
  assert.notEqual(c.code, 0);
  assert.match(c.err, new RegExp(`${join(e, 'model.gguf')}: is a folder, where the export writes its file model.gguf`));
  assert.equal(readFileSync(join(e, 'model.gguf', 'keep.txt'), 'utf8'), 'x');
  assert.deepEqual(leftovers(root), []);
});

test('a file at --out is refused, with or without --force; a new folder and an empty one are written', () => {
  const f = join(root, 'a-file');
  writeFileSync(f, 'mine');
  for (const force of [[], ['--force']]) {
    const r = rft('model', 'export', ck, '--format', 'hf', '--out', f, ...force);
    assert.notEqual(r.code, 0);
    assert.match(r.err, new RegExp(`${f}: a file of that name exists and the export writes a folder there`));
  }
  assert.equal(readFileSync(f, 'utf8'), 'mine');
  const fresh = join(root, 'new', 'deep', 'hf');
  assert.equal(rft('model', 'export', ck, '--format', 'hf', '--out', fresh).code, 0);
  assert.ok(statSync(join(fresh, 'model.safetensors')).size > 0);
  const empty = join(root, 'empty');
  mkdirSync(empty);
  assert.equal(rft('model', 'export', ck, '--format', 'gguf', '--out', empty).code, 0);
  assert.deepEqual(readdirSync(empty), ['model.gguf']);
  // The checkpoint's own folder (or one above it) is never an output.
  const self = rft('model', 'export', ck, '--format', 'hf', '--out', root, '--force');
  assert.match(self.err, /the output would overlap the checkpoint being exported/);
  assert.deepEqual(leftovers(root), []);
});

test('a failed export removes its temp folder; a SIGTERM while writing does too', async () => {
  const out = join(root, 'failing');
  await assert.rejects(
    writeExport(out, { format: 'hf', force: false }, async (tmp) => {
      writeFileSync(join(tmp, 'model.safetensors'), 'partial');
      throw new Error('disk full');
    }),
    /disk full/,
  );
  assert.ok(!existsSync(out));
  assert.deepEqual(leftovers(root), []);
  // A child killed by SIGTERM (the server cancelling an export) mid-write.
  const parent = mkdtempSync(join(root, 'term-'));
  const code = `import(${JSON.stringify(new URL('../../backend/model/export/target.ts', import.meta.url).href)}).then((m) =>
    m.writeExport(${JSON.stringify(join(parent, 'x'))}, { format: 'hf', force: false }, async (tmp) => {
      require('node:fs').writeFileSync(require('node:path').join(tmp, 'model.safetensors'), 'partial');
      await new Promise(() => setInterval(() => {}, 1000));
    }))`;
  const c = spawn(process.execPath, ['--import', 'tsx', '-e', code], { cwd: ROOT, stdio: 'ignore' });
  for (
    let i = 0;
    i < 200 &&
    !readdirSync(parent).some((n) => n.startsWith('x.tmp-') && existsSync(join(parent, n, 'model.safetensors')));
    i++
  )
    await new Promise((r) => setTimeout(r, 50));
  assert.equal(leftovers(parent).length, 1, 'the export was writing');
  const exited = new Promise<NodeJS.Signals | null>((r) => c.once('exit', (_code, sig) => r(sig)));
  c.kill('SIGTERM');
  assert.equal(await exited, 'SIGTERM', 'it still dies of the signal');
  assert.deepEqual(readdirSync(parent), []);
});

test('a GGUF writer killed -9 mid-write leaves no model.gguf (only its temp name)', async () => {
  const dir = mkdtempSync(join(root, 'gguf-kill-'));
  const file = join(dir, 'model.gguf');
  // 24M values converted to F16 one by one: long enough to be killed in the middle.
  const code = `import(${JSON.stringify(new URL('../../backend/model/export/gguf-file.ts', import.meta.url).href)}).then((m) => {
    const t = (i) => ({ name: 't' + i, shape: [1000, 1000], data: new Float32Array(1_000_000).fill(0.5), ggmlType: m.GGML_F16 });
    m.writeGguf(${JSON.stringify(file)}, [['general.architecture', { type: 'string', value: 'llama' }]], Array.from({ length: 24 }, (_, i) => t(i)));
  })`;
  const c = spawn(process.execPath, ['--import', 'tsx', '-e', code], { cwd: ROOT, stdio: 'ignore' });
  const exited = new Promise((r) => c.once('exit', r));
  let seen = false;
  for (let i = 0; i < 2000 && !seen; i++) {
    seen = readdirSync(dir).some((n) => n.startsWith('model.gguf.tmp-') && statSync(join(dir, n)).size > 0);
    if (!seen) await new Promise((r) => setTimeout(r, 5));
  }
  c.kill('SIGKILL');
  await exited;
  assert.ok(seen, 'the writer had started');
  assert.ok(!existsSync(file), 'no truncated model.gguf with a valid header');
  // Written whole, it appears under its name with nothing beside it.
  execFileSync(process.execPath, ['--import', 'tsx', '-e', code.replace('length: 24', 'length: 1')], { cwd: ROOT });
  assert.deepEqual(
    readdirSync(dir).filter((n) => !n.includes('.tmp-')),
    ['model.gguf'],
  );
});

test('a read-only target is refused naming the path, not ENOENT', (t) => {
  const ro = userFolder('read-only');
  const out = join(ro, 'hf');
  const args = [join(ROOT, 'bin/rft.mjs'), 'model', 'export', ck, '--format', 'hf', '--out', out];
  let r;
  if (process.getuid?.() !== 0) {
    execFileSync('chmod', ['555', ro]);
    r = spawnSync(process.execPath, args, {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, RFT_FROM_SOURCE: '1' },
    });
    execFileSync('chmod', ['755', ro]);
  } else {
    // Root writes through mode bits: a read-only bind mount in a private mount namespace instead.
    const probe = spawnSync('unshare', [
      '-m',
      'sh',
      '-c',
      `mount --bind '${ro}' '${ro}' && mount -o remount,ro,bind '${ro}' '${ro}'`,
    ]);
    if (probe.status !== 0) return t.skip('no read-only mount possible here');
    const sh = `mount --bind '${ro}' '${ro}' && mount -o remount,ro,bind '${ro}' '${ro}' && exec "$0" "$@"`;
    r = spawnSync('unshare', ['-m', 'sh', '-c', sh, process.execPath, ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, RFT_FROM_SOURCE: '1' },
    });
  }
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, new RegExp(`${out}: cannot write there: ${ro} is not writable \\((EROFS|EACCES)\\)`));
  assert.doesNotMatch(r.stderr, /ENOENT/);
  assert.deepEqual(readdirSync(ro), ['notes.md']);
});

test("a new export folder gets the usual mode (as a folder mkdir makes, e.g. 0755), not the temp folder's 0700", async () => {
  const probe = join(root, 'mode-probe');
  mkdirSync(probe);
  const usual = statSync(probe).mode & 0o777;
  const out = join(root, 'mode', 'gguf-out');
  await writeExport(out, { format: 'gguf', force: false }, async (tmp) => writeFileSync(join(tmp, 'model.gguf'), 'x'));
  assert.equal((statSync(out).mode & 0o777).toString(8), usual.toString(8));
});
