// An export into a mount point (issue 40, item 23): an empty volume root failed with an internal
// `EBUSY … rmdir` (a mount point cannot be removed), a non-empty one with --force with `EXDEV …
// rename` (the temp folder was beside it, on another volume). The export now writes its temp folder
// inside an existing target and renames within it. Each case runs in a child in its own mount
// namespace (`unshare -m`) with a tmpfs mounted on the target, so nothing outlives the test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const probe = mkdtempSync(join(tmpdir(), 'rft-mount-probe-'));
const canMount = spawnSync('unshare', ['-m', 'sh', '-c', `mount -t tmpfs none ${probe}`]).status === 0;

/** Mounts a tmpfs on MNT (holding USER_FILE when given), exports one file into it, and reports what is there. */
function exportIntoMount(
  force: boolean,
  userFile: boolean,
  bytes = 4,
  size = '16m',
): { out: string; status: number | null } {
  const mnt = mkdtempSync(join(tmpdir(), 'rft-mount-'));
  mkdirSync(mnt, { recursive: true });
  const js = `
const { writeExport } = await import('./backend/model/export/target.ts');
const { readdirSync, readFileSync, writeFileSync } = await import('node:fs');
const { join } = await import('node:path');
const mnt = ${JSON.stringify(mnt)};
${userFile ? "writeFileSync(join(mnt, 'notes.txt'), 'mine');" : ''}
try {
  const files = await writeExport(mnt, { format: 'gguf', force: ${force} }, async (tmp) => writeFileSync(join(tmp, 'model.gguf'), 'GGUF'.repeat(${bytes / 4})));
  console.log(JSON.stringify({ files, there: readdirSync(mnt).sort(), gguf: readFileSync(join(mnt, 'model.gguf'), 'utf8').slice(0, 4) }));
} catch (e) { console.log(JSON.stringify({ error: e.name + ': ' + e.message, there: readdirSync(mnt).sort() })); }`;
  const r = spawnSync(
    'unshare',
    [
      '-m',
      'sh',
      '-c',
      `mount -t tmpfs -o size=${size} none "$0" && exec "$1" --import tsx --input-type=module -e "$2"`,
      mnt,
      process.execPath,
      js,
    ],
    { cwd: ROOT, encoding: 'utf8', timeout: 120_000 },
  );
  return { out: (r.stdout ?? '') + (r.stderr ?? ''), status: r.status };
}

const last = (out: string) => JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>;

test('an export into an empty mount point writes in place', { skip: !canMount && 'cannot mount a tmpfs here' }, () => {
  const r = exportIntoMount(false, false);
  assert.equal(r.status, 0, r.out);
  assert.deepEqual(last(r.out), { files: ['model.gguf'], there: ['model.gguf'], gguf: 'GGUF' });
});

test(
  '--force into a mount point holding a file of the user: the export is placed, the file kept',
  { skip: !canMount && 'cannot mount a tmpfs here' },
  () => {
    const r = exportIntoMount(true, true);
    assert.equal(r.status, 0, r.out);
    assert.deepEqual(last(r.out), { files: ['model.gguf'], there: ['model.gguf', 'notes.txt'], gguf: 'GGUF' });
  },
);

test(
  'a full disk during an export is named, with the folder, and leaves nothing behind',
  { skip: !canMount && 'cannot mount a tmpfs here' },
  () => {
    const r = exportIntoMount(false, false, 4 << 20, '1m');
    assert.equal(r.status, 0, r.out);
    const got = last(r.out);
    assert.match(
      String(got.error),
      /^InfrastructureError: \/.*rft-mount-\w+: the disk is full \(ENOSPC\) while writing the export/,
    );
    assert.deepEqual(got.there, []);
  },
);
