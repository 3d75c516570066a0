// The run registry under hostile conditions: three processes writing at once lose no record, a
// structurally bad record is reported by index and field (the others are kept and served), and
// `rft resume` of a run that is still live is refused with its pid, taking nothing over.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertNotLive, claimRunPid, livePid, RunRegistry } from '../../backend/buffer/runs.js';
import { withFileLock } from '../../backend/buffer/file-lock.js';
import { tempDir } from './taskset-helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

function exited(c: ChildProcess): Promise<number | null> {
  return c.exitCode !== null ? Promise.resolve(c.exitCode) : new Promise((r) => c.once('exit', (code) => r(code)));
}

test('three writer processes at once: every record kept (90 of 90), no temp-file error', async () => {
  const ws = tempDir('rft-runs-race-');
  await RunRegistry.open(ws);
  const procs = ['a', 'b', 'c'].map((tag) => {
    const c = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/buffer/runs-writer.ts'), ws, tag, '30'], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(c);
    let err = '';
    c.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    return exited(c).then((code) => ({ code, err }));
  });
  // This process writes too, meanwhile.
  const here = await RunRegistry.open(ws);
  for (let i = 0; i < 10; i++) await here.create({ name: 'main', config: {}, id: `main-${i}` });
  for (const r of await Promise.all(procs)) assert.equal(r.code, 0, r.err);
  const runs = await here.list();
  assert.equal(runs.length, 100);
  for (const tag of ['a', 'b', 'c']) {
    for (let i = 0; i < 30; i++) {
      const r = runs.find((x) => x.id === `${tag}-${i}`);
      assert.ok(r, `${tag}-${i} kept`);
      assert.equal(r.status, 'running', `${tag}-${i} status kept`);
      assert.deepEqual(
        r.checkpoints.map((c) => c.path),
        [`ck/${tag}-${i}`],
        `${tag}-${i} checkpoint kept`,
      );
    }
  }
  assert.equal(here.problems.length, 0);
});

test('a lock held by a process killed with -9 is free at once', async () => {
  const ws = tempDir('rft-runs-kill-');
  const lock = join(ws, 'x.lock');
  const holder = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      `import('${join(ROOT, 'backend/buffer/file-lock.ts')}').then((m) => m.withFileLock(${JSON.stringify(lock)}, () => { console.log('held'); setInterval(() => {}, 1000); return new Promise(() => {}); }))`,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(holder);
  await new Promise<void>((r) => holder.stdout!.once('data', () => r()));
  await assert.rejects(
    withFileLock(lock, () => 1, { timeoutMs: 200 }),
    /still locked by another process/,
  );
  holder.kill('SIGKILL');
  await exited(holder);
  assert.equal(await withFileLock(lock, () => 42, { timeoutMs: 2000 }), 42);
});

test('structurally bad records are reported by index and field; the valid ones are served and kept', async () => {
  const ws = tempDir('rft-runs-bad-');
  const reg = await RunRegistry.open(ws);
  const good = await reg.create({ name: 'good', config: {}, id: 'good' });
  const file = join(ws, '.rft', 'runs.json');
  const data = JSON.parse(readFileSync(file, 'utf8')) as { runs: unknown[] };
  data.runs.push(
    null,
    { ...good, id: 'bad-status', status: 'exploded' },
    { ...good, id: 'bad-ck', checkpoints: [{ version: 1, path: 3, step: 0 }] },
    { ...good, id: 'late' },
  );
  writeFileSync(file, JSON.stringify(data));
  const again = await RunRegistry.open(ws);
  assert.deepEqual((await again.list()).map((r) => r.id).sort(), ['good', 'late']);
  assert.deepEqual(again.problems, [
    'runs[1]: expected a run object, got null',
    'runs[2].status: expected one of created, running, paused, stopped, completed, failed, got "exploded"',
    'runs[3].checkpoints[0].path: expected a string, got 3',
  ]);
  // A write keeps the bad records in the file as they are (the user fixes them), and works.
  await again.setStatus('late', 'completed');
  await assert.rejects(again.setStatus('bad-status', 'completed'), /no run 'bad-status'/);
  const after = JSON.parse(readFileSync(file, 'utf8')) as { runs: { id?: string; status?: string }[] };
  assert.equal(after.runs.length, 5);
  assert.equal(after.runs[1], null);
  assert.equal(after.runs[2]!.status, 'exploded');
  assert.equal(after.runs[4]!.status, 'completed');
});

test('a live run folder is refused with its pid; a pid file left by a dead process is taken over', async () => {
  const dir = tempDir('rft-runs-pid-');
  const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  children.push(sleeper);
  writeFileSync(join(dir, 'run.pid'), String(sleeper.pid));
  assert.equal(livePid(dir), sleeper.pid);
  assert.throws(
    () => assertNotLive(dir, 'r1'),
    new RegExp(`run 'r1' is still running as pid ${sleeper.pid}.*rft stop r1`),
  );
  assert.throws(() => claimRunPid(dir, 'r1'), new RegExp(`still running as pid ${sleeper.pid}`));
  assert.equal(readFileSync(join(dir, 'run.pid'), 'utf8'), String(sleeper.pid), 'the live run keeps its pid file');
  sleeper.kill('SIGKILL');
  await exited(sleeper);
  assert.equal(livePid(dir), null);
  claimRunPid(dir, 'r1');
  assert.equal((JSON.parse(readFileSync(join(dir, 'run.pid'), 'utf8')) as { pid: number }).pid, process.pid);
});

test('rft resume of a live run is refused naming its pid; its status and pid file are left alone', async () => {
  const ws = tempDir('rft-runs-resume-');
  const reg = await RunRegistry.open(ws);
  const r = await reg.create({ name: 'live', config: {}, id: 'live' });
  await reg.setStatus(r.id, 'running');
  mkdirSync(r.dir, { recursive: true });
  const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  children.push(sleeper);
  writeFileSync(join(r.dir, 'run.pid'), String(sleeper.pid));
  const c = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'backend/cli.ts'), 'resume', 'live', '--workspace', ws],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(c);
  let err = '';
  c.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  assert.notEqual(await exited(c), 0);
  assert.match(err, new RegExp(`run 'live' is still running as pid ${sleeper.pid}`));
  const after = (await reg.get('live'))!;
  assert.equal(after.status, 'running');
  assert.equal(after.statusReason, undefined);
  assert.equal(readFileSync(join(r.dir, 'run.pid'), 'utf8'), String(sleeper.pid));
  assert.ok(existsSync(join(r.dir, 'run.pid')));
  sleeper.kill('SIGKILL');
});
