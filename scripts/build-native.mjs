// Builds native/rft_blas.c (an N-API sgemm over the platform's BLAS) into vendor/rft-blas.node.
// Runs at `npm install` (postinstall) and from the tensor engine when the file is missing. It never
// fails the install: without a compiler, node headers or a BLAS the wasm matmul stays in use, and
// the reason is written to vendor/rft-blas.status.json (the engine logs it once).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'native', 'rft_blas.c');
const outDir = join(root, 'vendor');
const out = join(outDir, 'rft-blas.node');
const statusFile = join(outDir, 'rft-blas.status.json');
const quiet = process.argv.includes('--quiet');

function done(ok, detail, extra = {}) {
  mkdirSync(outDir, { recursive: true });
  writeFileSync(
    statusFile,
    JSON.stringify({ ok, detail, node: process.version, platform: `${process.platform}-${process.arch}`, ...extra }) +
      '\n',
  );
  if (!quiet)
    console.error(
      ok
        ? `native BLAS built -> ${out} (${detail})`
        : `native BLAS not built (the wasm matmul stays in use): ${detail}`,
    );
  if (!quiet && extra.blas_core)
    console.error(
      `OpenBLAS kernels: ${extra.blas_core}${extra.coretype ? ` (OPENBLAS_CORETYPE=${extra.coretype}, ${extra.core_note})` : ''}`,
    );
  process.exit(0);
}

// OpenBLAS's DYNAMIC_ARCH build (Debian's) picks its kernel family from the CPU's family/model at
// load; a CPU newer than the library (0.3.21 knows neither Emerald Rapids nor every Zen 4) falls back
// to Prescott's SSE3 kernels, measured 5x slower for sgemm on an AVX-512 Xeon. Where the CPU's flags
// allow a wider family, time one product with each in a child (single thread, best of 3) and record
// the fastest when it wins by 30%; the engine sets OPENBLAS_CORETYPE from it before loading the addon
// (RFT_BLAS_CORETYPE or an inherited OPENBLAS_CORETYPE wins: backend/model/openblas-env.ts). Nothing is forced on a
// CPU that lacks the instructions.
function probeCore(addonFile) {
  if (process.platform !== 'linux' || process.arch !== 'x64' || !existsSync('/proc/cpuinfo')) return {};
  const flags = new Set(
    (readFileSync('/proc/cpuinfo', 'utf8').match(/^flags\s*:(.*)$/m)?.[1] ?? '').trim().split(/\s+/),
  );
  const candidates = [undefined];
  if (['avx2', 'fma'].every((f) => flags.has(f))) candidates.push('Haswell');
  if (['avx512f', 'avx512bw', 'avx512vl', 'avx512dq', 'avx512cd'].every((f) => flags.has(f)))
    candidates.push('SkylakeX');
  const probe = `const m=require(${JSON.stringify(addonFile)});if(!m.blasCore)process.exit(4);const N=256,a=new Float32Array(N*N).fill(1.01),b=new Float32Array(N*N).fill(0.99),c=new Float32Array(N*N);const run=()=>m.sgemmExt(a.buffer,0,b.buffer,0,c.buffer,0,N,N,N,0,0);for(let i=0;i<3;i++)run();let best=Infinity;for(let r=0;r<3;r++){const t=process.hrtime.bigint();for(let i=0;i<10;i++)run();best=Math.min(best,Number(process.hrtime.bigint()-t));}if(c.some((x)=>Math.abs(x-N*1.01*0.99)>0.01))process.exit(5);console.log(JSON.stringify({core:m.blasCore(),gflops:2*N*N*N*10/best}))`;
  const results = [];
  for (const coretype of candidates) {
    const env = { ...process.env, OPENBLAS_NUM_THREADS: '1' };
    if (coretype) env.OPENBLAS_CORETYPE = coretype;
    else delete env.OPENBLAS_CORETYPE;
    const r = spawnSync(process.execPath, ['-e', probe], { encoding: 'utf8', env, timeout: 30_000 });
    if (r.status !== 0) continue; // a family that fails to load, crashes or computes a wrong product is not a candidate
    try {
      results.push({ coretype, ...JSON.parse(r.stdout.trim()) });
    } catch {
      /* an unreadable probe is skipped */
    }
  }
  const chosen = results.find((r) => r.coretype === undefined);
  if (!chosen) return {};
  const best = results.reduce((a, b) => (b.gflops > a.gflops ? b : a));
  const probeTable = Object.fromEntries(results.map((r) => [r.core, Number(r.gflops.toFixed(1))]));
  if (best.coretype && best.gflops > 1.3 * chosen.gflops) {
    return {
      blas_core: best.core,
      coretype: best.coretype,
      core_note: `detected ${chosen.core}, ${(best.gflops / chosen.gflops).toFixed(1)}x slower`,
      core_gflops: probeTable,
    };
  }
  return { blas_core: chosen.core, core_gflops: probeTable };
}

if (process.env.RFT_NATIVE_BLAS === '0') done(false, 'RFT_NATIVE_BLAS=0');
if (!existsSync(src)) done(false, `missing ${src}`);

// Node's headers: beside the node binary (official builds and Debian), or npm's nodedir.
const headerDirs = [
  process.env.npm_config_nodedir && join(process.env.npm_config_nodedir, 'include', 'node'),
  join(dirname(process.execPath), '..', 'include', 'node'),
  '/usr/include/node',
  '/usr/local/include/node',
].filter(Boolean);
const headers = headerDirs.find((d) => existsSync(join(d, 'node_api.h')));
if (!headers) done(false, `node_api.h not found in ${headerDirs.join(', ')}`);

const cc = process.env.CC || 'cc';
if (spawnSync(cc, ['--version'], { stdio: 'ignore' }).status !== 0) done(false, `no C compiler ('${cc}')`);

// BLAS candidates, best first. Linking the runtime .so.0 directly works where only the runtime
// package (libopenblas0) is installed, without the -dev symlink.
const libs = [];
if (process.platform === 'darwin') libs.push(['-framework', 'Accelerate']);
else {
  libs.push(['-lopenblas']);
  for (const d of ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib']) {
    if (!existsSync(d)) continue;
    for (const f of readdirSync(d)) if (/^libopenblas\.so\.\d+$/.test(f)) libs.push([join(d, f)]);
  }
  libs.push(['-lcblas'], ['-lblas']);
}
// -O3 vectorises the small-product loops; the addon is built on the machine that runs it.
const flags = ['-O3', '-fopenmp-simd', '-shared', '-fPIC', '-DNODE_GYP_MODULE_NAME=rft_blas', `-I${headers}`];
if (
  process.platform !== 'darwin' &&
  spawnSync(cc, ['-march=native', '-E', '-x', 'c', '/dev/null'], { stdio: 'ignore' }).status === 0
)
  flags.push('-march=native');
if (process.platform === 'darwin') flags.push('-undefined', 'dynamic_lookup');

const tmp = join(outDir, `rft-blas.tmp-${process.pid}.node`); // .node: require() picks the loader by extension
const errors = [];
for (const lib of libs) {
  const r = spawnSync(cc, [...flags, src, ...lib, '-lm', '-o', tmp], { encoding: 'utf8' });
  if (r.status !== 0) {
    errors.push(`${lib.join(' ')}: ${(r.stderr || r.error?.message || '').trim().split('\n').slice(-1)[0]}`);
    continue;
  }
  // Load it in a child and check one product: a library that links but lacks cblas_sgemm fails here.
  const probe = `const m=require(${JSON.stringify(tmp)});const h=new Float32Array([1,2,3,4,5,6,7,8,0,0,0,0]);m.sgemm(h.buffer,0,16,32,1,2,2,2,0,0,0,0);if(h[8]!==19||h[9]!==22||h[10]!==43||h[11]!==50)process.exit(3)`;
  const t = spawnSync(process.execPath, ['-e', probe], { encoding: 'utf8' });
  if (t.status !== 0) {
    errors.push(
      `${lib.join(' ')}: built but failed its check (${(t.stderr || '').trim().split('\n')[0] || `exit ${t.status}`})`,
    );
    rmSync(tmp, { force: true });
    continue;
  }
  renameSync(tmp, out);
  done(true, `${cc} with ${lib.join(' ')}`, probeCore(out));
}
rmSync(tmp, { force: true });
done(false, `no BLAS could be linked: ${errors.join('; ')}`);
