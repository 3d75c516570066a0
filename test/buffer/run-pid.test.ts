// Pid files are checked before anything is signalled (issue 24): a run's `run.pid` that outlived its
// process (kill -9, reboot) and now names an unrelated live process makes `rft stop` / `rft pause` /
// the server's runs/stop signal nothing, and the run is marked stopped; the run's own live process
// is still signalled.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RunRegistry, claimRunPid, livePid } from '../../backend/buffer/runs.js';
import { checkPidFile, pidFileText } from '../../backend/core/pid-file.js';
import { processIdentity, procStartTime, psStartTime } from '../../backend/core/process-identity.js';
import { cliCommand } from '../../backend/coordinator/processes.js';
import { ProcessRunController } from '../../backend/server/process-run-controller.js';
import { tempDir } from './taskset-helpers.js';

const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** An unrelated live process (what a stale pid may name after a reboot). */
function sleeper(): ChildProcess {
  const c = spawn('sleep', ['60'], { stdio: 'ignore' });
  children.push(c);
  return c;
}

const stillAlive = async (c: ChildProcess) => {
  await new Promise((r) => setTimeout(r, 300));
  return c.exitCode === null && c.signalCode === null;
};

async function runningRun(id: string) {
  const ws = tempDir('rft-run-pid-');
  const reg = await RunRegistry.open(ws);
  const r = await reg.create({ name: id, config: {}, id });
  await reg.setStatus(r.id, 'running');
  mkdirSync(r.dir, { recursive: true });
  return { ws, reg, dir: r.dir };
}

/** What a run killed -9 leaves: its pid file, whose pid the system has since given to another process. */
function stalePidFile(dir: string, id: string, pid: number): void {
  const real = processIdentity(pid)!;
  writeFileSync(
    join(dir, 'run.pid'),
    JSON.stringify({ pid, owner: id, identity: real.replace(/\d+$/, (n) => String(Number(n) + 1)) }),
  );
}

const cli = (args: string[]) =>
  spawnSync(process.execPath, [...cliCommand(), ...args], { encoding: 'utf8', timeout: 60_000 });

test('the identity of a process: its start time; none for a pid nobody has', () => {
  assert.match(processIdentity(process.pid) ?? '', /^linux:.+:\d+$/);
  assert.equal(processIdentity(process.pid), processIdentity(process.pid));
  assert.ok(procStartTime(process.pid));
  // ps (the macOS / BSD check) works here too: a start time for a live pid, nothing for a free one.
  assert.ok(psStartTime(process.pid));
  assert.equal(psStartTime(4_000_000), null);
  assert.equal(processIdentity(4_000_000), null);
});

test('rft stop does not signal an unrelated process whose pid a stale run.pid names; the run is marked stopped', async () => {
  const s = sleeper();
  const { ws, reg, dir } = await runningRun('gone');
  stalePidFile(dir, 'gone', s.pid!);
  assert.equal(checkPidFile(join(dir, 'run.pid'), 'gone').state, 'gone');
  const r = cli(['stop', 'gone', '--workspace', ws]);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(
    r.stderr,
    new RegExp(
      `run 'gone' has no live process \\(pid ${s.pid} .* is now another process.*nothing signalled; marked stopped \\(rft resume gone`,
    ),
  );
  assert.ok(await stillAlive(s), 'the unrelated process was not signalled');
  const after = (await reg.get('gone'))!;
  assert.equal(after.status, 'stopped');
  assert.match(after.statusReason ?? '', /process was gone when stop was asked/);
  // Resume is not blocked by it either: the stale file is taken over.
  assert.equal(livePid(dir, 'gone'), null);
  claimRunPid(dir, 'gone');
  assert.deepEqual(checkPidFile(join(dir, 'run.pid'), 'gone'), { state: 'live', pid: process.pid });
});

test('rft pause of a bare pid file (older version) naming a live process signals nothing and says why', async () => {
  const s = sleeper();
  const { ws, reg, dir } = await runningRun('legacy');
  writeFileSync(join(dir, 'run.pid'), String(s.pid));
  const r = cli(['pause', 'legacy', '--workspace', ws]);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(
    r.stderr,
    new RegExp(
      `holds only a pid .* nothing signalled\\. If pid ${s.pid} is this run, signal it yourself \\(kill -USR2 ${s.pid}\\)`,
    ),
  );
  assert.ok(await stillAlive(s));
  assert.equal((await reg.get('legacy'))!.status, 'running', 'a process that may be the run leaves its status alone');
});

test('a pid file written for another run is not that run', async () => {
  const s = sleeper();
  const { ws, dir } = await runningRun('mine');
  writeFileSync(
    join(dir, 'run.pid'),
    JSON.stringify({ pid: s.pid, owner: 'theirs', identity: processIdentity(s.pid!) }),
  );
  const r = cli(['stop', 'mine', '--workspace', ws]);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /written by 'theirs', not 'mine'/);
  assert.ok(await stillAlive(s));
});

test("the run's own live process is signalled (CLI stop), and the server's runs/stop refuses a stale pid", async () => {
  const { ws, reg, dir } = await runningRun('live');
  const file = join(dir, 'run.pid');
  // A stand-in for the run: writes its pid file as runJob does, and records the signal it gets.
  const code = `import(${JSON.stringify(new URL('../../backend/core/pid-file.ts', import.meta.url).href)}).then((m) => {
    require('node:fs').writeFileSync(${JSON.stringify(file)}, m.pidFileText('live'));
    process.on('SIGTERM', () => { require('node:fs').writeFileSync(${JSON.stringify(file + '.got')}, 'TERM'); process.exit(0); });
    setInterval(() => {}, 1000);
  })`;
  const run = spawn(process.execPath, ['--import', 'tsx', '-e', code], { stdio: 'ignore' });
  children.push(run);
  const exit = new Promise((r) => run.once('exit', r));
  for (let i = 0; i < 200 && checkPidFile(file, 'live').state !== 'live'; i++)
    await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(checkPidFile(file, 'live'), { state: 'live', pid: run.pid });
  const r = cli(['stop', 'live', '--workspace', ws]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`sent SIGTERM to ${run.pid}`));
  await exit;
  assert.equal(readFileSync(file + '.got', 'utf8'), 'TERM');

  // The server: the same stale file is refused without a signal and the run marked stopped, at once.
  const s = sleeper();
  await reg.setStatus('live', 'running');
  stalePidFile(dir, 'live', s.pid!);
  const t0 = Date.now();
  const info = await new ProcessRunController(ws).stop('live');
  assert.ok(Date.now() - t0 < 5000, 'no wait for a process that is not there');
  assert.equal(info.status, 'stopped');
  assert.match(info.statusReason ?? '', /no live process .* nothing signalled/);
  assert.ok(await stillAlive(s));
  // A bare pid that may be the run: a conflict naming it, nothing signalled.
  await reg.setStatus('live', 'running');
  writeFileSync(file, String(s.pid));
  await assert.rejects(
    new ProcessRunController(ws).stop('live'),
    (e: Error) => /holds only a pid/.test(e.message) && e.message.includes(String(s.pid)),
  );
  assert.ok(await stillAlive(s));
});

test('pidFileText records this process, its owner and its start time', () => {
  const j = JSON.parse(pidFileText('r9')) as { pid: number; owner: string; identity: string };
  assert.deepEqual(j, { pid: process.pid, owner: 'r9', identity: processIdentity(process.pid) });
});
