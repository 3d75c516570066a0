// A FIFO, a device or a link to one where the command line expects a file (issue 40, item 17), and
// `--check` opening what the config names (item 24): `rft run X --check` on a FIFO config hung in
// open(), a config linked to /dev/zero or `taskset.path: /dev/urandom` read without end, and
// `--check` said `valid` for a taskset that is /etc/passwd. Each is now one line naming the file.
// The commands run in a child with a deadline, so a regression fails instead of hanging the suite.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const hasMkfifo = spawnSync('mkfifo', ['--version']).status === 0;
const dir = mkdtempSync(join(tmpdir(), 'rft-special-cli-'));

function rft(...args: string[]): { status: number | null; out: string; timedOut: boolean } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'backend/cli.ts'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 90_000,
    env: { ...process.env, RFT_LOG_LEVEL: 'error' },
  });
  return {
    status: r.status,
    out: (r.stdout ?? '') + (r.stderr ?? ''),
    timedOut: r.error !== undefined && /ETIMEDOUT/.test(String(r.error)),
  };
}

const config = (name: string, extra: string) => {
  const f = join(dir, name);
  // GRPO: the default MIX needs `experts`, which these configs do not name (refused by --check).
  writeFileSync(f, `workflow:\n  reward: exact_match\nalgorithm:\n  name: grpo\n${extra}`);
  return f;
};
const fifo = (name: string) => {
  const f = join(dir, name);
  assert.equal(spawnSync('mkfifo', [f]).status, 0);
  return f;
};
writeFileSync(
  join(dir, 'tasks.jsonl'),
  '{"id":"a","prompt":"1+1","answer":"2"}\n{"id":"b","prompt":"2+2","answer":"4"}\n',
);

test(
  'rft run --check on a FIFO config, or one linked to /dev/zero, names the file at once',
  { skip: !hasMkfifo && 'no mkfifo' },
  () => {
    const f = fifo('fifo.rft.yaml');
    const a = rft('run', f, '--check');
    assert.equal(a.timedOut, false, 'rft run --check on a FIFO hung');
    assert.equal(a.status, 1);
    assert.match(a.out, new RegExp(`${f}: is a FIFO \\(named pipe\\), not a file`));

    const z = join(dir, 'zero.rft.yaml');
    symlinkSync('/dev/zero', z);
    const b = rft('run', z, '--check');
    assert.equal(b.timedOut, false, 'rft run --check on /dev/zero read without end');
    assert.equal(b.status, 1);
    assert.match(b.out, new RegExp(`${z}: is a character device \\(a link to /dev/zero\\), not a file`));
  },
);

test(
  'a taskset that is a FIFO or /dev/urandom is refused by --check, naming the field and the file',
  { skip: !hasMkfifo && 'no mkfifo' },
  () => {
    const t = fifo('fifo-tasks.jsonl');
    const a = rft('run', config('c1.yaml', `taskset:\n  path: ${t}\n`), '--check');
    assert.equal(a.timedOut, false);
    assert.equal(a.status, 1);
    assert.match(a.out, /field 'taskset\.path': '.*fifo-tasks\.jsonl' is a FIFO \(named pipe\), not a file/);
    const b = rft('run', config('c2.yaml', 'taskset:\n  path: /dev/urandom\n'), '--check');
    assert.equal(b.timedOut, false);
    assert.equal(b.status, 1);
    assert.match(b.out, /field 'taskset\.path': '\/dev\/urandom' is a character device, not a file/);
  },
);

test(
  'rft taskset validate on a FIFO or /dev/urandom names the file at once',
  { skip: !hasMkfifo && 'no mkfifo' },
  () => {
    const t = fifo('fifo2.jsonl');
    for (const f of [t, '/dev/urandom']) {
      const r = rft('taskset', 'validate', f, join(dir, 'tasks.jsonl'));
      assert.equal(r.timedOut, false, `rft taskset validate ${f} hung`);
      assert.equal(r.status, 1);
      assert.match(r.out, new RegExp(`${f}: is a (FIFO \\(named pipe\\)|character device), not a file`));
      // The files after it are still checked.
      assert.match(r.out, /tasks\.jsonl: 2 valid, 0 errors \(2 records\)/);
    }
  },
);

test('--check opens the taskset and the checkpoint: /etc/passwd or a folder without a model is not valid', () => {
  const ok = rft('run', config('ok.yaml', 'taskset:\n  path: tasks.jsonl\n'), '--check');
  assert.equal(ok.status, 0, ok.out);
  const line = JSON.parse(ok.out.trim().split('\n').pop()!) as { valid: boolean; taskset: string };
  assert.equal(line.valid, true);
  assert.match(line.taskset, /^2 task\(s\) in .*tasks\.jsonl$/);

  if (existsSync('/etc/passwd')) {
    const p = rft('run', config('passwd.yaml', 'taskset:\n  path: /etc/passwd\n'), '--check');
    assert.equal(p.status, 1, p.out);
    assert.match(p.out, /\/etc\/passwd: field 'taskset\.path'/);
    assert.doesNotMatch(p.out, /"valid":true/);
  }
  const c = rft(
    'run',
    config('ck.yaml', `taskset:\n  path: tasks.jsonl\nmodel:\n  checkpoint: ${tmpdir()}\n`),
    '--check',
  );
  assert.equal(c.status, 1, c.out);
  assert.match(c.out, /field 'model\.checkpoint': no checkpoint at .*config\.json missing/);
  // A model folder whose config.json is a link to /dev/zero: refused by name, not read.
  mkdirSync(join(dir, 'model'));
  symlinkSync('/dev/zero', join(dir, 'model', 'config.json'));
  const z = rft('run', config('ck2.yaml', 'taskset:\n  path: tasks.jsonl\nmodel:\n  checkpoint: model\n'), '--check');
  assert.equal(z.timedOut, false);
  assert.equal(z.status, 1, z.out);
  assert.match(
    z.out,
    /field 'model\.checkpoint': .*model\/config\.json: is a character device \(a link to \/dev\/zero\)/,
  );
});
