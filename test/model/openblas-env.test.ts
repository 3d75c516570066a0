// The OpenBLAS environment the native addon loads with (backend/model/openblas-env.ts): who picks the
// kernel family, the note the engine logs, and that the process environment is put back after the
// load, so child processes (a PyTorch baseline) see the user's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { THREAD_TIMEOUT_LOG2, openblasLoadEnv, withEnv } from '../../backend/model/openblas-env.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const probe = { core_gflops: { Cooperlake: 197.9, Haswell: 100, SkylakeX: 200.3 } };

test('no setting anywhere: OpenBLAS detects the family itself; workers spin 2^16 cycles, not 2^28', () => {
  assert.deepEqual(openblasLoadEnv({}, probe), { set: { OPENBLAS_THREAD_TIMEOUT: THREAD_TIMEOUT_LOG2 }, note: '' });
  // A user's own timeout is theirs.
  assert.deepEqual(openblasLoadEnv({ OPENBLAS_THREAD_TIMEOUT: '28' }, probe).set, {});
});

test("the install's probe choice is used when nothing in the environment names a family", () => {
  const r = openblasLoadEnv({}, { ...probe, coretype: 'SkylakeX', core_note: 'detected Prescott, 4.7x slower' });
  assert.equal(r.set.OPENBLAS_CORETYPE, 'SkylakeX');
  assert.match(r.note, /SkylakeX from the install's probe: detected Prescott, 4\.7x slower/);
});

test('an environment family is kept; when the probe measured a family 1.3x faster the note names it and how to take it', () => {
  const slow = openblasLoadEnv({ OPENBLAS_CORETYPE: 'Haswell' }, { ...probe, coretype: 'SkylakeX' });
  assert.equal(slow.set.OPENBLAS_CORETYPE, undefined, 'the inherited value stays in force: nothing is set over it');
  assert.match(slow.note, /OPENBLAS_CORETYPE=Haswell from the environment/);
  assert.match(slow.note, /SkylakeX 2\.0x faster on this CPU: RFT_BLAS_CORETYPE=SkylakeX/);
  // Within 30% of the best: no advice.
  const close = openblasLoadEnv({ OPENBLAS_CORETYPE: 'cooperlake' }, probe);
  assert.equal(close.note, ' (OPENBLAS_CORETYPE=cooperlake from the environment)');
  // A family the probe never timed: no claim either way.
  assert.equal(
    openblasLoadEnv({ OPENBLAS_CORETYPE: 'Zen' }, probe).note,
    ' (OPENBLAS_CORETYPE=Zen from the environment)',
  );
});

test("RFT_BLAS_CORETYPE wins over the environment's OPENBLAS_CORETYPE and the probe", () => {
  const r = openblasLoadEnv({ RFT_BLAS_CORETYPE: 'SkylakeX', OPENBLAS_CORETYPE: 'Haswell' }, { coretype: 'Haswell' });
  assert.equal(r.set.OPENBLAS_CORETYPE, 'SkylakeX');
  assert.equal(r.note, ' (OPENBLAS_CORETYPE=SkylakeX from RFT_BLAS_CORETYPE)');
});

test('withEnv sets the variables for the load only, restoring set and unset ones (also when the load throws)', () => {
  process.env.RFT_TEST_A = 'user';
  delete process.env.RFT_TEST_B;
  const seen = withEnv({ RFT_TEST_A: 'x', RFT_TEST_B: 'y' }, () => [process.env.RFT_TEST_A, process.env.RFT_TEST_B]);
  assert.deepEqual(seen, ['x', 'y']);
  assert.equal(process.env.RFT_TEST_A, 'user');
  assert.equal(process.env.RFT_TEST_B, undefined);
  assert.throws(() =>
    withEnv({ RFT_TEST_B: 'z' }, () => {
      throw new Error('load failed');
    }),
  );
  assert.equal(process.env.RFT_TEST_B, undefined);
  delete process.env.RFT_TEST_A;
});

const cpuFlags = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
const hasHaswell = /\bavx2\b/.test(cpuFlags) && /\bfma\b/.test(cpuFlags);
const built = existsSync(`${ROOT}vendor/rft-blas.node`);
test(
  'the real addon loads with the family RFT_BLAS_CORETYPE names, and the process environment is as before',
  { skip: !built ? 'native addon not built' : !hasHaswell ? 'CPU without AVX2/FMA (Haswell kernels)' : false },
  () => {
    const script = `import { initEngine } from './backend/model/engine.ts'; import { nativeAddon } from './backend/model/native-blas.ts';
const i = await initEngine({ backend: 'wasm' });
console.log(JSON.stringify({ detail: i.matmul?.detail, core: nativeAddon()?.blasCore?.(), coretype: process.env.OPENBLAS_CORETYPE ?? null, timeout: process.env.OPENBLAS_THREAD_TIMEOUT ?? null }));`;
    const env: NodeJS.ProcessEnv = { ...process.env, RFT_BLAS_CORETYPE: 'Haswell', RFT_LOG_LEVEL: 'error' };
    delete env.OPENBLAS_CORETYPE;
    delete env.OPENBLAS_THREAD_TIMEOUT;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      env,
    });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, string | null>;
    assert.equal(out.core, 'Haswell');
    assert.match(out.detail!, /OPENBLAS_CORETYPE=Haswell from RFT_BLAS_CORETYPE/);
    assert.equal(out.coretype, null, 'OPENBLAS_CORETYPE is not left in the environment');
    assert.equal(out.timeout, null, 'OPENBLAS_THREAD_TIMEOUT is not left in the environment');
  },
);

// Issue 40 item 00: the PyTorch baseline of the benches gets the family the engine loads with, so a
// ratio compares engines and not kernel families (Debian's torch does its matmuls through OpenBLAS).
test("the benches' PyTorch baseline runs with the engine's family: the probe's, RFT_BLAS_CORETYPE's or the environment's", async (t) => {
  const { torchEnv, torchPython } = await import('../../bench/torch.js');
  const chosen = { ...probe, coretype: 'SkylakeX', core_note: 'detected Prescott' };
  assert.equal(torchEnv({}, chosen).OPENBLAS_CORETYPE, 'SkylakeX');
  assert.equal(torchEnv({ RFT_BLAS_CORETYPE: 'Haswell' }, chosen).OPENBLAS_CORETYPE, 'Haswell');
  assert.equal(torchEnv({ OPENBLAS_CORETYPE: 'Zen' }, chosen).OPENBLAS_CORETYPE, 'Zen');
  assert.equal(torchEnv({}, probe).OPENBLAS_CORETYPE, undefined, "no choice: OpenBLAS's own detection on both sides");
  // And torch's OpenBLAS really takes it (where python3-torch is installed).
  const py = torchPython();
  if (!py) return t.skip('python3-torch not installed');
  const env = torchEnv({ ...process.env, RFT_BLAS_CORETYPE: 'Haswell' }, chosen);
  const r = spawnSync(
    py,
    [
      '-c',
      'import ctypes, torch\nf = ctypes.CDLL("libopenblas.so.0").openblas_get_corename\nf.restype = ctypes.c_char_p\nprint(f().decode())',
    ],
    { encoding: 'utf8', env },
  );
  if (r.status !== 0) return t.skip(`torch without OpenBLAS here: ${r.stderr.slice(-200)}`);
  assert.equal(r.stdout.trim(), 'Haswell');
});
