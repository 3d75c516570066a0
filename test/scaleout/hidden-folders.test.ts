// The weight stores through the CLI, with each "machine" seeing only its own folders: every process
// runs in its own mount namespace with an empty tmpfs over the folders of the other machines (as
// test/scaleout/scaleout.test.ts hides the weights folder), so nothing can be read from a shared disk.
// 1. S3 (`rft coordinator --weights s3://… --s3-endpoint`, s3rver on loopback, credentials only in
//    the environment): the trainer's folder is hidden from the explorers; every version they load
//    comes from S3 (loads.folder 0, http 0).
// 2. HTTPS and a trainer away from the coordinator: the coordinator's folder is hidden from the
//    trainer and the explorers, the trainer's from the explorers; the trainer starts from v0 out of
//    the database, serves HTTPS (`--weights-tls-cert/-key`, certificate made by openssl here), the
//    explorers load every version over HTTPS with the recorded certificate pinned.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import S3rver from 's3rver';
import { cliCommand } from '../../backend/coordinator/processes.js';
import { startPg } from '../buffer/storage-helpers.js';

const root = mkdtempSync(join(tmpdir(), 'rft-hidden-'));
after(() => rmSync(root, { recursive: true, force: true }));
const STEPS = 5;

function configFile(name: string): string {
  const f = join(root, `${name}.yaml`);
  writeFileSync(
    f,
    stringify({
      name,
      seed: 11,
      model: { size: 'tiny-0.4m', max_seq_len: 32 },
      tokenizer: { kind: 'char' },
      taskset: { builtin: 'reverse', size: 24 },
      eval: { builtin: 'reverse', size: 4, split: 'eval' },
      workflow: { name: 'single_turn', reward: 'exact_match' },
      explorer: {
        tasks_per_step: 2,
        repeat_times: 2,
        sampling: { max_new_tokens: 4 },
        eval_sampling: { max_new_tokens: 4 },
      },
      trainer: { batch_size: 4, steps: STEPS },
      algorithm: { name: 'grpo' },
      buffer: { storage: 'postgres', max_staleness: 1 },
      placement: 'checkpoint',
      synchronizer: { sync_interval: 1, sync_offset: 1 },
    }),
  );
  return f;
}

interface Proc {
  name: string;
  out: string;
  exit: Promise<number | null>;
  child: ChildProcess;
}

/** `rft ARGS` on a "machine" that sees an empty folder at each path of `hidden`. */
function rft(name: string, args: string[], hidden: string[], env: NodeJS.ProcessEnv = {}): Proc {
  const node = [process.execPath, ...cliCommand(), ...args];
  for (const h of hidden) mkdirSync(h, { recursive: true });
  const script =
    hidden.map((_, i) => `mount -t tmpfs tmpfs "$${i + 1}" && `).join('') + `shift ${hidden.length} && exec "$@"`;
  const child = hidden.length
    ? spawn('unshare', ['-m', 'sh', '-c', script, 'sh', ...hidden, ...node], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...env },
      })
    : spawn(node[0]!, node.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const p: Proc = { name, out: '', child, exit: new Promise((res) => child.on('exit', (code) => res(code))) };
  child.stdout!.on('data', (b: Buffer) => (p.out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (p.out += b.toString()));
  return p;
}

const result = <T>(p: Proc, kind: string): T => {
  const line = p.out.split('\n').find((l) => l.includes(`"kind":"${kind}"`));
  assert.ok(line, `${p.name}: no ${kind} line\n${p.out.slice(-3000)}`);
  return JSON.parse(line) as T;
};

async function finish(procs: Proc[], ms: number): Promise<void> {
  const timer = setTimeout(() => procs.forEach((p) => p.child.kill('SIGKILL')), ms);
  try {
    for (const p of procs) assert.equal(await p.exit, 0, `${p.name} exit\n${p.out.slice(-3000)}`);
  } finally {
    clearTimeout(timer);
  }
}

const canHide = process.getuid?.() === 0 && spawnSync('unshare', ['-m', 'true']).status === 0;

type Loads = { folder: number; http: number; s3: number };

test(
  "S3 through the CLI: explorers that cannot see the trainer's folder load every version from S3",
  {
    timeout: 300_000,
    skip: canHide ? false : 'needs root and unshare to give each process its own view of the folders',
  },
  async (t) => {
    const server = startPg();
    if ('skip' in server) return t.skip(server.skip);
    const s3 = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: join(root, 's3data'),
      configureBuckets: [{ name: 'rft' }],
    });
    const { port } = await s3.run();
    const creds = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', RFT_LOG_LEVEL: 'warn' };
    const trainerDir = join(root, 's3-trainer-host');
    try {
      const coord = rft(
        'coordinator',
        [
          'coordinator',
          configFile('s3run'),
          '--buffer',
          server.url,
          '--run',
          'H3',
          '--weights',
          's3://rft/team',
          '--s3-endpoint',
          `http://127.0.0.1:${port}`,
        ],
        [],
        creds,
      );
      await finish([coord], 120_000);
      assert.match(coord.out, /"checkpoint":"s3:\/\/rft\/team\/H3\/[0-9a-f]{64}\/"/);
      const trainer = rft(
        'trainer',
        ['trainer', '--buffer', server.url, '--run', 'H3', '--weights', trainerDir],
        [],
        creds,
      );
      const explorers = [1, 2].map((i) =>
        rft(
          `explorer${i}`,
          ['explorer', '--buffer', server.url, '--run', 'H3', '--weights-cache', join(root, `s3-cache${i}`)],
          [trainerDir],
          creds,
        ),
      );
      await finish([trainer, ...explorers], 240_000);
      const tr = result<{ done: boolean; step: number }>(trainer, 'trainer_result');
      assert.equal(tr.done, true);
      assert.equal(tr.step, STEPS);
      const loads = explorers.map((e) => result<{ loads: Loads; jobs: number }>(e, 'explorer_result'));
      t.diagnostic(`explorers: ${loads.map((l) => `${l.jobs} jobs, loads ${JSON.stringify(l.loads)}`).join('; ')}`);
      for (const l of loads) {
        assert.equal(l.loads.folder, 0, "the trainer's folder is not visible to the explorers");
        assert.equal(l.loads.http, 0, 'the trainer serves nothing with an object store');
      }
      assert.ok(loads.reduce((a, l) => a + l.loads.s3, 0) >= 2, JSON.stringify(loads));
      assert.ok(
        existsSync(join(trainerDir, 'H3', 'summary.json')),
        "the run record is in the trainer's --weights folder",
      );
    } finally {
      await s3.close();
      server.stop();
    }
  },
);

test(
  'HTTPS through the CLI, the trainer away from the coordinator: v0 from the database, every version over HTTPS pinned',
  {
    timeout: 300_000,
    skip: canHide ? false : 'needs root and unshare to give each process its own view of the folders',
  },
  async (t) => {
    const server = startPg();
    if ('skip' in server) return t.skip(server.skip);
    const coordDir = join(root, 'https-coordinator-host');
    const trainerDir = join(root, 'https-trainer-host');
    const made = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=trainer',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(root, 'tls.key'),
        '-out',
        join(root, 'tls.pem'),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(made.status, 0, made.stderr);
    const env = { RFT_LOG_LEVEL: 'warn' };
    try {
      const coord = rft(
        'coordinator',
        [
          'coordinator',
          configFile('httpsrun'),
          '--buffer',
          server.url,
          '--run',
          'HS',
          '--weights',
          join(coordDir, 'weights'),
        ],
        [],
        env,
      );
      await finish([coord], 120_000);
      const trainer = rft(
        'trainer',
        [
          'trainer',
          '--buffer',
          server.url,
          '--run',
          'HS',
          '--weights',
          trainerDir,
          '--weights-host',
          '127.0.0.1',
          '--weights-tls-cert',
          join(root, 'tls.pem'),
          '--weights-tls-key',
          join(root, 'tls.key'),
        ],
        [coordDir],
        { RFT_LOG_LEVEL: 'info' },
      );
      const explorers = [1, 2].map((i) =>
        rft(
          `explorer${i}`,
          ['explorer', '--buffer', server.url, '--run', 'HS', '--weights-cache', join(root, `https-cache${i}`)],
          [coordDir, trainerDir],
          env,
        ),
      );
      await finish([trainer, ...explorers], 240_000);
      assert.match(trainer.out, /fetching v0 from the run database/);
      assert.match(trainer.out, /serving weights at https:\/\/127\.0\.0\.1:\d+/);
      const tr = result<{ done: boolean; step: number }>(trainer, 'trainer_result');
      assert.equal(tr.done, true);
      const loads = explorers.map((e) => result<{ loads: Loads; jobs: number }>(e, 'explorer_result'));
      t.diagnostic(`explorers: ${loads.map((l) => `${l.jobs} jobs, loads ${JSON.stringify(l.loads)}`).join('; ')}`);
      for (const l of loads)
        assert.deepEqual([l.loads.folder, l.loads.s3], [0, 0], 'neither folder is visible to the explorers');
      assert.ok(loads.reduce((a, l) => a + l.loads.http, 0) >= 2, JSON.stringify(loads));
    } finally {
      server.stop();
    }
  },
);
