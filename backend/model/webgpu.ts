// The webgpu tensor engine: tfjs's WebGPU backend on Dawn's Node bindings (npm `webgpu`), which talk to
// Vulkan (Linux, Windows), Metal (macOS) or D3D12 (Windows). Dawn provides `navigator.gpu`; it must
// exist before @tensorflow/tfjs-backend-webgpu is imported (the backend registers only when it does).
// Without a GPU, SwiftShader's Vulkan driver (Debian's chromium ships it) gives a CPU "fallback"
// adapter: everything runs, slowly, so CI tests the GPU code paths there.
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);

/** SwiftShader's Vulkan ICD as Debian's chromium installs it: used when no GPU driver is configured. */
export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

/** Names of GPU drivers that are the CPU in disguise (SwiftShader, Mesa's llvmpipe / lavapipe / softpipe, Windows' WARP). */
export const EMULATED_GPU = /swiftshader|llvmpipe|lavapipe|softpipe|warp/i;

/**
 * engine.ts's auto takes webgpu on a real GPU only for a model of at least this many parameters. Measured
 * (docs/performance.md, `npm run bench -- gpu` on an NVIDIA H200 and `-- gpu --cpu` on the two-core CPU
 * engine): the GPU trains faster at every preset (3.4x at 0.5M, 16x at 3.3M, 41x at 24M), but a run also
 * samples on the same engine, and KV sampling of 16 sequences is launch-bound on the GPU (about 850-1,050
 * tok/s from 0.5M to 24M) where the CPU engine samples 10,700 tok/s at 0.5M, 4,600 at 3.3M and 584 at 24M.
 * With as many tokens sampled as trained, the CPU is 2.3x faster at 3.3M and the GPU 2.4x faster at 24M;
 * the line between crosses near 10M.
 */
export const WEBGPU_AUTO_MIN_PARAMS = 10_000_000;

export interface GpuAdapterInfo {
  /** e.g. "nvidia", "google" (SwiftShader). */
  vendor: string;
  architecture: string;
  description: string;
  /** A CPU implementation (SwiftShader, WARP): works, but never faster than the CPU engine. */
  fallback: boolean;
  features: string[];
}

interface GpuLike {
  requestAdapter(opts?: { powerPreference?: string }): Promise<AdapterLike | null>;
}
/** Dawn's GPUAdapterInfo, as far as the engine reads it. */
export interface DawnAdapterInfo {
  vendor?: string;
  architecture?: string;
  description?: string;
  device?: string;
  isFallbackAdapter?: boolean;
}
interface AdapterLike {
  info?: DawnAdapterInfo;
  isFallbackAdapter?: boolean;
  features: Iterable<string>;
}

let gpu: GpuLike | undefined;

/**
 * Dawn's `navigator.gpu`, created once per process. Dawn reads Vulkan drivers from the system;
 * `useSwiftShader` (tests, CI, `npm run bench -- gpu --swiftshader`) points it at SwiftShader's when
 * no driver list is set, so the GPU code paths run on a machine without a GPU.
 */
function dawn(useSwiftShader: boolean): GpuLike {
  if (gpu) return gpu;
  if (useSwiftShader && !process.env.VK_ICD_FILENAMES && existsSync(SWIFTSHADER_ICD))
    process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
  // Dawn's Vulkan backend wants a runtime dir (it warns and some drivers fail without one).
  if (!process.env.XDG_RUNTIME_DIR) {
    const dir = join(tmpdir(), `rft-xdg-${process.getuid?.() ?? 0}`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    process.env.XDG_RUNTIME_DIR = dir;
  }
  const mod = require('webgpu') as { create(flags: string[]): GpuLike; globals: Record<string, unknown> };
  // tfjs-backend-webgpu refers to GPUBufferUsage & co. as globals, as in a browser.
  for (const [k, v] of Object.entries(mod.globals))
    if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
  gpu = mod.create([]);
  const nav = (globalThis as { navigator?: { gpu?: unknown } }).navigator;
  if (!nav) Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  else if (!nav.gpu) Object.defineProperty(nav, 'gpu', { value: gpu, configurable: true });
  return gpu;
}

/**
 * On Linux, whether any Vulkan driver manifest is where the Vulkan loader looks (the env overrides, then
 * the XDG config/data dirs and /etc): without one Dawn finds no adapter anyway, after loading itself and
 * printing "vkCreateInstance: Found no drivers!" to stderr. Other systems: true (Metal, D3D12 are built in).
 */
export function vulkanDriverConfigured(env: NodeJS.ProcessEnv = process.env, platform = process.platform): boolean {
  if (platform !== 'linux') return true;
  if (env.VK_ICD_FILENAMES || env.VK_DRIVER_FILES || env.VK_ADD_DRIVER_FILES) return true;
  const home = homedir();
  const dirs = [
    env.XDG_CONFIG_HOME || join(home, '.config'),
    ...(env.XDG_CONFIG_DIRS || '/etc/xdg').split(':'),
    '/usr/local/etc',
    '/etc',
    env.XDG_DATA_HOME || join(home, '.local/share'),
    ...(env.XDG_DATA_DIRS || '/usr/local/share:/usr/share').split(':'),
  ];
  return dirs.some((d) => {
    if (!d) return false;
    try {
      return readdirSync(join(d, 'vulkan', 'icd.d')).some((f) => f.endsWith('.json'));
    } catch {
      return false;
    }
  });
}

/** The adapter probe's answer: an adapter, or null and why not. */
export interface GpuProbe {
  adapter: GpuAdapterInfo | null;
  why?: string;
}

/**
 * The adapter Dawn offers, or null with the reason (the `webgpu` package missing, no Vulkan loader,
 * no driver). Never throws: the caller decides whether a missing GPU is an error (forced) or a fallback.
 * `needDriver` (auto's probe): on Linux without a Vulkan driver manifest, answer without loading Dawn.
 */
export async function probeGpuAdapter(
  opts: { useSwiftShader?: boolean; needDriver?: boolean } = {},
): Promise<GpuProbe> {
  const useSwiftShader = opts.useSwiftShader ?? process.env.RFT_WEBGPU_SWIFTSHADER === '1';
  if (opts.needDriver && !gpu && !(useSwiftShader && existsSync(SWIFTSHADER_ICD)) && !vulkanDriverConfigured())
    return { adapter: null, why: 'no Vulkan driver is installed (no ICD manifest in vulkan/icd.d)' };
  let g: GpuLike;
  try {
    g = dawn(useSwiftShader);
  } catch (e) {
    const msg = (e as Error).message.split('\n')[0] ?? String(e);
    return {
      adapter: null,
      why: msg.includes('Cannot find module')
        ? "the optional package 'webgpu' (Dawn) is not installed"
        : `Dawn failed to load: ${msg}`,
    };
  }
  let refused: string | undefined;
  const a = await g.requestAdapter({ powerPreference: 'high-performance' }).catch((e: unknown) => {
    refused = e instanceof Error ? e.message.split('\n')[0] : String(e);
    return null;
  });
  if (!a) {
    return {
      adapter: null,
      why: `Dawn found no GPU adapter${refused ? ` (${refused})` : ''}; its warnings in the log say why (a driver it refused, or none found). It needs the Vulkan loader libvulkan1 and a driver with the features it requires on Linux, Metal on macOS, D3D12 on Windows${swiftShaderHint(useSwiftShader)}`,
    };
  }
  return { adapter: adapterInfo(a.info ?? {}, Boolean(a.isFallbackAdapter), [...a.features]) };
}

/**
 * Where SwiftShader is installed but not used: how to run the WebGPU engine on it (an emulated GPU on
 * the CPU, slow; the status bar then says `GPU (emulated)`).
 */
export function swiftShaderHint(using: boolean, icd = SWIFTSHADER_ICD, present = existsSync(icd)): string {
  if (using || !present) return '';
  return `. SwiftShader (a GPU emulated on the CPU) is installed (${icd}): set RFT_WEBGPU_SWIFTSHADER=1 in the backend's environment to run the WebGPU engine on it, slowly`;
}

/** What the engine keeps of Dawn's GPUAdapterInfo. */
export function adapterInfo(info: DawnAdapterInfo, isFallback: boolean, features: string[]): GpuAdapterInfo {
  return {
    vendor: info.vendor ?? '',
    // NVIDIA's Vulkan driver leaves the architecture empty and describes itself by driver version
    // ("NVIDIA: 580.159.04 ..."): the device ("nvidia-h200") is then what names the GPU.
    architecture: info.architecture || (info.device && info.device !== info.description ? info.device : ''),
    description: info.description || info.device || '',
    fallback:
      Boolean(info.isFallbackAdapter ?? isFallback) ||
      EMULATED_GPU.test(`${info.vendor} ${info.architecture} ${info.description}`),
    features,
  };
}

/** A one-line name for logs and the status bar: "nvidia ampere (NVIDIA H200)", "SwiftShader (CPU fallback)". */
export function adapterName(a: GpuAdapterInfo): string {
  const base = [a.vendor, a.architecture].filter(Boolean).join(' ') + (a.description ? ` (${a.description})` : '');
  return a.fallback ? `${base || 'adapter'} - a CPU fallback, not a GPU` : base || 'GPU adapter';
}

/** Registers tfjs's webgpu backend on Dawn (after probeGpuAdapter found an adapter). */
export async function registerWebgpuBackend(): Promise<void> {
  await import('@tensorflow/tfjs-backend-webgpu');
}
