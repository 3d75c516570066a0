// One line naming the machine a test run ran on (CI prints it), so a float difference or a timing can
// be tied to a CPU: its model, its widest vector extension, and the kernel family OpenBLAS chose for it
// (DYNAMIC_ARCH builds pick at load; a CPU it does not know falls back to an older family, which
// changes both speed and summation order).
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';

const info = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
const field = (name) => info.match(new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm'))?.[1]?.trim();
const model = field('model name') ?? field('Model') ?? cpus()[0]?.model ?? 'unknown CPU';
const flags = new Set((field('flags') ?? field('Features') ?? '').split(/\s+/));
const vector =
  ['avx512f', 'avx2', 'avx', 'sse4_2', 'sve', 'asimd'].find((f) => flags.has(f)) ??
  (process.arch === 'arm64' ? 'neon' : 'unknown');
let blas;
// In the engine's order (backend/model/openblas-env.ts): RFT_BLAS_CORETYPE, then the environment's
// OPENBLAS_CORETYPE, then the install's probe.
const status = existsSync('vendor/rft-blas.status.json')
  ? JSON.parse(readFileSync('vendor/rft-blas.status.json', 'utf8'))
  : {};
const [core, by] = process.env.RFT_BLAS_CORETYPE
  ? [process.env.RFT_BLAS_CORETYPE, 'RFT_BLAS_CORETYPE']
  : process.env.OPENBLAS_CORETYPE
    ? [process.env.OPENBLAS_CORETYPE, 'the environment']
    : status.coretype
      ? [status.coretype, `the install's probe: ${status.core_note ?? ''}`]
      : [undefined, ''];
if (core) process.env.OPENBLAS_CORETYPE = core;
const forced = core ? ` (OPENBLAS_CORETYPE=${core} from ${by})` : '';
try {
  const addon = createRequire(import.meta.url)('../vendor/rft-blas.node');
  blas = addon.blasCore
    ? `OpenBLAS core ${addon.blasCore() ?? 'n/a (not OpenBLAS)'}${forced}`
    : 'addon without blasCore (old build)';
} catch (e) {
  blas = `no native addon (${String(e.message).split('\n')[0]})`;
}
console.log(
  `machine: ${model}, ${cpus().length} cores, ${vector}${flags.has('avx512_bf16') ? ' +bf16' : ''}; BLAS: ${blas}; node ${process.version} ${process.platform}-${process.arch}`,
);
