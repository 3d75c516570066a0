// Tensor engine selection. `auto` (the default) probes Dawn first: a real GPU adapter and a model of at
// least WEBGPU_AUTO_MIN_PARAMS (the caller passes its size) -> webgpu (backend/model/webgpu.ts).
// Otherwise, or when webgpu fails to start: tfjs-node-gpu, then tfjs-node (both only where their
// libtensorflow installed, which it rarely does), then wasm (+ the native BLAS addon), then the pure-JS
// cpu backend; why webgpu was passed over is the first entry of `tried`. RFT_BACKEND, the `backend`
// option or the extension's rftStudio.engine setting (which sets RFT_BACKEND) force one engine.
// The choice and the reason are logged once.
import { InfrastructureError, InputError } from '../core/errors.js';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';

import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { logger } from '../core/log.js';
import { packageRoot } from '../core/package-root.js';
import { installNativeBlas } from './native-blas.js';
import { installWasmKernels } from './wasm-kernels.js';
import { installWebgpuKernels } from './wgsl/index.js';
import { installWebgpuOverrides } from './webgpu-kernels.js';
import { watchGpuDevice } from './gpu-guard.js';
import {
  adapterName,
  probeGpuAdapter,
  registerWebgpuBackend,
  type GpuAdapterInfo,
  type GpuProbe,
  WEBGPU_AUTO_MIN_PARAMS,
} from './webgpu.js';

export { WEBGPU_AUTO_MIN_PARAMS };

export type BackendName = 'tensorflow-gpu' | 'tensorflow' | 'webgpu' | 'wasm' | 'cpu';
/** Auto's order after webgpu (which is tried first only when autoWebgpu says so). */
export const BACKEND_ORDER: BackendName[] = ['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu'];

const millions = (n: number) => `${(n / 1e6).toFixed(n < 1e7 ? 1 : 0)}M`;

/**
 * Auto's decision on webgpu from the adapter probe and the model's parameter count. Undefined (the
 * caller does not know it: tests, benches, the distributed trainer and explorer) keeps the CPU engine,
 * since the GPU is only known to win from WEBGPU_AUTO_MIN_PARAMS up. `why` is the log's reason either way.
 */
export function autoWebgpu(probe: GpuProbe, modelParams?: number): { webgpu: boolean; why: string } {
  const a = probe.adapter;
  if (!a) return { webgpu: false, why: probe.why ?? 'Dawn found no GPU adapter' };
  // adapterName says "- a CPU fallback, not a GPU" for SwiftShader & co.
  if (a.fallback) return { webgpu: false, why: adapterName(a) };
  if (modelParams === undefined)
    return {
      webgpu: false,
      why: `the model's size was not given (the GPU is taken for ${millions(WEBGPU_AUTO_MIN_PARAMS)} parameters or more; adapter ${adapterName(a)})`,
    };
  if (modelParams < WEBGPU_AUTO_MIN_PARAMS)
    return {
      webgpu: false,
      why: `the model's ${millions(modelParams)} parameters are below ${millions(WEBGPU_AUTO_MIN_PARAMS)}, the smallest size where the GPU measured faster (adapter ${adapterName(a)})`,
    };
  return {
    webgpu: true,
    why: `auto: a GPU adapter and a model of ${millions(modelParams)} parameters (at least ${millions(WEBGPU_AUTO_MIN_PARAMS)})`,
  };
}

export interface EngineInfo {
  backend: BackendName;
  reason: string;
  tried: { backend: BackendName; error: string }[];
  /** Which matmul the wasm backend uses: 'native-blas' (vendor/rft-blas.node) or 'wasm', and why. */
  matmul?: { kernel: 'native-blas' | 'wasm'; detail: string };
  /** The webgpu engine's adapter (Dawn), e.g. "nvidia hopper (NVIDIA H200)". */
  adapter?: GpuAdapterInfo & { name: string };
}

const log = logger('engine');
const require = createRequire(import.meta.url);
const ROOT = packageRoot();

/**
 * tfjs-core's Node entry registers no gradients nor chained tensor methods, and its ES-module
 * files cannot be loaded by Node; scripts/vendor-tfjs.mjs bundles them (run at npm install).
 */
function loadCoreExtras(): void {
  const file = join(ROOT, 'vendor', `tfjs-core-extras-${tf.version_core}.cjs`);
  if (!existsSync(file)) {
    const script = join(ROOT, 'scripts', 'vendor-tfjs.mjs');
    if (!existsSync(script)) throw new InfrastructureError(`missing ${file}: reinstall RFT Studio`);
    execFileSync(process.execPath, [script], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  require(file);
}
loadCoreExtras();
let current: EngineInfo | undefined;
let pending: Promise<EngineInfo> | undefined;

/**
 * tfjs-node registers kernels before it notices its libtensorflow binding is missing (its install
 * script downloads it, which fails offline); check first so a failed try leaves no half-registered backend.
 */
function assertNativeBinding(pkg: string): void {
  const dir = dirname(require.resolve(`${pkg}/package.json`));
  const lib = join(dir, 'lib');
  const found = existsSync(lib) && readdirSync(lib).some((d) => existsSync(join(lib, d, 'tfjs_binding.node')));
  if (!found)
    throw new Error(
      `${pkg} is installed without its native binding (its install script did not run or could not download libtensorflow)`,
    );
}

async function tryBackend(name: BackendName): Promise<GpuAdapterInfo | void> {
  switch (name) {
    case 'webgpu': {
      const { adapter, why } = await probeGpuAdapter();
      if (!adapter) throw new Error(why);
      await registerWebgpuBackend();
      if (!(await tf.setBackend('webgpu')))
        throw new Error(`the webgpu backend failed to initialise on ${adapterName(adapter)}`);
      // Dawn's errors are events: after one, reads throw instead of returning zeros (gpu-guard.ts).
      watchGpuDevice(tf.backend());
      return adapter;
    }
    case 'tensorflow-gpu':
      // Registers the 'tensorflow' backend with CUDA kernels.
      assertNativeBinding('@tensorflow/tfjs-node-gpu');
      require('@tensorflow/tfjs-node-gpu');
      if (!(await tf.setBackend('tensorflow'))) throw new Error('tfjs-node-gpu loaded but setBackend failed');
      return;
    case 'tensorflow':
      assertNativeBinding('@tensorflow/tfjs-node');
      require('@tensorflow/tfjs-node');
      if (!(await tf.setBackend('tensorflow'))) throw new Error('tfjs-node loaded but setBackend failed');
      return;
    case 'wasm': {
      const wasm = await import('@tensorflow/tfjs-backend-wasm');
      // In Node the .wasm binaries are read from the package's dist folder.
      const dist = dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json'));
      wasm.setWasmPaths(join(dist, 'dist') + '/');
      if (!(await tf.setBackend('wasm'))) throw new Error('wasm backend failed to initialise');
      return;
    }
    case 'cpu':
      if (!(await tf.setBackend('cpu'))) throw new Error('cpu backend failed to initialise');
      return;
  }
}

function parseForced(v: string | undefined): BackendName | undefined {
  if (!v) return undefined;
  const alias: Record<string, BackendName> = {
    gpu: 'webgpu',
    webgpu: 'webgpu',
    'tfjs-node-gpu': 'tensorflow-gpu',
    'tensorflow-gpu': 'tensorflow-gpu',
    node: 'tensorflow',
    'tfjs-node': 'tensorflow',
    tensorflow: 'tensorflow',
    wasm: 'wasm',
    cpu: 'cpu',
  };
  // `auto` (the extension setting's default) is the ordered search below.
  if (v.toLowerCase() === 'auto') return undefined;
  const b = alias[v.toLowerCase()];
  if (!b) throw new InputError(`RFT_BACKEND='${v}' is not one of ${Object.keys(alias).join(', ')}`);
  return b;
}

/**
 * Initialise the tensor engine once per process. A forced backend that fails is an error
 * (the user asked for it); otherwise each backend is tried in order and the first that works wins.
 */
export function initEngine(opts: { backend?: string; modelParams?: number } = {}): Promise<EngineInfo> {
  if (current) return Promise.resolve(current);
  if (pending) return pending;
  pending = (async () => {
    const forced = parseForced(opts.backend ?? process.env.RFT_BACKEND);
    const tried: EngineInfo['tried'] = [];
    let order = forced ? [forced] : BACKEND_ORDER;
    let autoWhy: string | undefined;
    if (!forced) {
      // needDriver: where no Vulkan driver is installed, Dawn is not even loaded.
      const choice = autoWebgpu(await probeGpuAdapter({ needDriver: true }), opts.modelParams);
      if (choice.webgpu) {
        order = ['webgpu', ...BACKEND_ORDER];
        autoWhy = choice.why;
      } else tried.push({ backend: 'webgpu', error: choice.why });
    }
    for (const name of order) {
      try {
        const adapter = await tryBackend(name);
        const reason = forced
          ? `forced by ${opts.backend ? 'the backend setting' : 'RFT_BACKEND'}`
          : name === 'webgpu' && autoWhy
            ? autoWhy
            : tried.length === 0
              ? 'first choice available'
              : `fallback after: ${tried.map((t) => `${t.backend} (${t.error})`).join('; ')}`;
        current = { backend: name, reason, tried };
        if (adapter) current.adapter = { ...adapter, name: adapterName(adapter) };
        log.info(`tensor engine: ${name} - ${reason}${current.adapter ? ` - adapter ${current.adapter.name}` : ''}`);
        if (name === 'webgpu') {
          installWebgpuOverrides();
          installWebgpuKernels();
        }
        if (name === 'wasm') {
          installWasmKernels();
          const blas = installNativeBlas(ROOT);
          current.matmul = { kernel: blas.active ? 'native-blas' : 'wasm', detail: blas.detail };
          log.info(`matmul: ${current.matmul.kernel} - ${blas.detail}`);
        }
        return current;
      } catch (e) {
        const msg = (e as Error).message.split('\n')[0] ?? String(e);
        tried.push({ backend: name, error: msg.includes('Cannot find module') ? 'not installed' : msg });
        if (forced)
          throw new Error(
            `backend '${name}' ${msg.includes('Cannot find module') ? 'is not installed' : `failed: ${msg}`}`,
          );
      }
    }
    throw new InfrastructureError(
      `no tensor engine could start: ${tried.map((t) => `${t.backend}: ${t.error}`).join('; ')}`,
    );
  })();
  return pending;
}

export function engineInfo(): EngineInfo | undefined {
  return current;
}

/** The engine in a few words, for the dashboard: "webgpu: nvidia hopper (NVIDIA H200)", "wasm + native BLAS". */
export function engineLabel(info: EngineInfo): string {
  switch (info.backend) {
    case 'webgpu':
      return `webgpu: ${info.adapter?.name ?? 'adapter not named'}`;
    case 'wasm':
      return info.matmul?.kernel === 'native-blas' ? 'wasm + native BLAS' : 'wasm (its own matmul)';
    case 'cpu':
      return 'cpu (plain JavaScript)';
    case 'tensorflow':
      return 'tfjs-node (libtensorflow)';
    case 'tensorflow-gpu':
      return 'tfjs-node-gpu (libtensorflow, CUDA)';
  }
}

/**
 * The metrics record naming a process's tensor engine (`kind: engine`), written once at its start:
 * the dashboard shows it (coordinator/monitor.ts runEngines). `run` is the run's own process.
 */
export function engineRecord(component: 'run' | 'trainer' | 'explorer'): {
  kind: 'engine';
  component: string;
  tensor: string;
} {
  const info = current;
  return { kind: 'engine', component, tensor: info ? engineLabel(info) : 'not started' };
}

export { tf };

/** tf.tidy for results that are plain objects of tensors (typed; tfjs' TensorContainer type is too narrow for interfaces). */
export function tidy<T>(fn: () => T): T {
  return tf.tidy(fn as unknown as () => tf.TensorContainer) as unknown as T;
}
