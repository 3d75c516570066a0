// A full disk during a run (issue 40 item 20): the child-log stream's ENOSPC 'error' was unhandled
// and ended `rft run` with a raw stack (exit 7), the run left `running` and temp folders behind.
// Now: the worker is stopped and its `done` rejects with "disk full at PATH"; a checkpoint that
// cannot be written leaves no temp folder; the run is marked failed with that line.
// The full disk is real: /dev/full (every write ENOSPC) behind the log's name, and a small tmpfs
// where this runs as root.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '../../backend/coordinator/processes.js';
import { DiskFullError } from '../../backend/core/disk-full.js';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { saveCheckpoint } from '../../backend/model/checkpoint.js';
import { cliNodeArgs } from '../../backend/core/package-root.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { tinyConfig, writeConfig } from './tiny-config.js';

const linux = process.platform === 'linux' && existsSync('/dev/full');

test(
  'the child log on a full disk: the worker is stopped and fails with "disk full at PATH" (no crash)',
  { skip: !linux },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-disk-full-'));
    const cli = process.env.RFT_CLI;
    try {
      // The worker's program: prints a line every few ms for ever (it is stopped, never ends by itself).
      const prog = join(dir, 'chatty.mjs');
      writeFileSync(prog, `setInterval(() => console.log('step'), 5);\n`);
      process.env.RFT_CLI = prog;
      const logs = join(dir, 'logs');
      mkdirSync(logs);
      symlinkSync('/dev/full', join(logs, 'explorer.log'));
      const w = new Worker({ name: 'explorer', args: [], restarts: 0 }, logs);
      const pid = w.pid!;
      await assert.rejects(w.done, (e: Error) => {
        assert.ok(e instanceof DiskFullError, e.message);
        assert.match(
          e.message,
          new RegExp(`^disk full at ${join(logs, 'explorer.log').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `),
        );
        assert.match(e.message, /resumable from its last checkpoint/);
        return true;
      });
      // The worker was stopped, not left writing to the full disk.
      assert.throws(() => process.kill(pid, 0), /ESRCH/);
    } finally {
      if (cli === undefined) delete process.env.RFT_CLI;
      else process.env.RFT_CLI = cli;
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

function mountTmpfs(dir: string, size: string): boolean {
  if (process.getuid?.() !== 0) return false;
  return spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]).status === 0;
}

test('a checkpoint that does not fit: "disk full at PATH", no temp folder left, the earlier checkpoint kept', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-disk-full-ck-'));
  if (!linux || !mountTmpfs(dir, '256k')) {
    rmSync(dir, { recursive: true, force: true });
    return t.skip('needs root and tmpfs (mount -t tmpfs)');
  }
  try {
    await initEngine();
    const small = new Transformer(
      makeConfig({ vocabSize: 16, dModel: 8, nLayers: 1, nHeads: 2, nKvHeads: 2, dFF: 16, maxSeqLen: 8 }),
      1,
    );
    const big = new Transformer(
      makeConfig({ vocabSize: 64, dModel: 128, nLayers: 2, nHeads: 4, nKvHeads: 4, dFF: 256, maxSeqLen: 8 }),
      1,
    );
    try {
      await saveCheckpoint(small, join(dir, 'v1'), { version: 1, step: 1 });
      await assert.rejects(saveCheckpoint(big, join(dir, 'v2'), { version: 2, step: 2 }), (e: Error) => {
        assert.ok(e instanceof DiskFullError, e.message);
        assert.match(e.message, /^disk full at .*v2\.tmp-\d+/);
        return true;
      });
      assert.deepEqual(readdirSync(dir).sort(), ['v1'], 'no v2 and no temp folder');
    } finally {
      small.dispose();
      big.dispose();
    }
  } finally {
    spawnSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a run whose disk fills: rft run stops with "disk full at PATH" (no raw stack), the run is marked failed, no temp folder left', async (t) => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-disk-full-run-'));
  if (!linux || !mountTmpfs(ws, '1m')) {
    rmSync(ws, { recursive: true, force: true });
    return t.skip('needs root and tmpfs (mount -t tmpfs)');
  }
  try {
    const cfg = tinyConfig({ sync_offset: 0 }, 1, {
      experts: undefined,
      stages: [{ name: 'main', algorithm: { name: 'grpo' }, steps: 2 }],
      placement: 'memory',
    });
    const file = writeConfig(ws, cfg);
    const r = spawnSync(
      process.execPath,
      [...cliNodeArgs(), 'run', file, '--workspace', ws, '--quiet', '--run-id', 'full'],
      {
        encoding: 'utf8',
        timeout: 300_000,
      },
    );
    assert.equal(r.status, 1, r.stderr.slice(-2000));
    assert.match(
      r.stderr,
      /^rft: disk full at \/.*: ENOSPC: no space left on device.*resumable from its last checkpoint/m,
    );
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no raw stack');
    const run = await (await RunRegistry.open(ws)).get('full');
    assert.equal(run?.status, 'failed');
    const leftovers = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
        d.isDirectory()
          ? [...(/\.tmp-\d+$/.test(d.name) ? [join(dir, d.name)] : []), ...leftovers(join(dir, d.name))]
          : [],
      );
    assert.deepEqual(leftovers(ws), []);
  } finally {
    spawnSync('umount', [ws]);
    rmSync(ws, { recursive: true, force: true });
  }
});
