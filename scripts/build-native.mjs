// Builds native/rft_blas.c (an N-API sgemm over the platform's BLAS) into vendor/rft-blas.node.
// Runs at `npm install` (postinstall) and from the tensor engine when the file is missing. It never
// fails the install: without a compiler, node headers or a BLAS the wasm matmul stays in use, and
// the reason is written to vendor/rft-blas.status.json (the engine logs it once).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'native', 'rft_blas.c');
const outDir = join(root, 'vendor');
const out = join(outDir, 'rft-blas.node');
const statusFile = join(outDir, 'rft-blas.status.json');
const quiet = process.argv.includes('--quiet');

function done(ok, detail) {
  mkdirSync(outDir, { recursive: true });
  writeFileSync(statusFile, JSON.stringify({ ok, detail, node: process.version, platform: `${process.platform}-${process.arch}` }) + '\n');
  if (!quiet) console.error(ok ? `native BLAS built -> ${out} (${detail})` : `native BLAS not built (the wasm matmul stays in use): ${detail}`);
  process.exit(0);
}

if (process.env.RFT_NATIVE_BLAS === '0') done(false, 'RFT_NATIVE_BLAS=0');
if (!existsSync(src)) done(false, `missing ${src}`);

// Node's headers: beside the node binary (official builds and Debian), or npm's nodedir.
const headerDirs = [process.env.npm_config_nodedir && join(process.env.npm_config_nodedir, 'include', 'node'), join(dirname(process.execPath), '..', 'include', 'node'), '/usr/include/node', '/usr/local/include/node']
  .filter(Boolean);
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
if (process.platform !== 'darwin' && spawnSync(cc, ['-march=native', '-E', '-x', 'c', '/dev/null'], { stdio: 'ignore' }).status === 0) flags.push('-march=native');
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
    errors.push(`${lib.join(' ')}: built but failed its check (${(t.stderr || '').trim().split('\n')[0] || `exit ${t.status}`})`);
    rmSync(tmp, { force: true });
    continue;
  }
  renameSync(tmp, out);
  done(true, `${cc} with ${lib.join(' ')}`);
}
rmSync(tmp, { force: true });
done(false, `no BLAS could be linked: ${errors.join('; ')}`);
