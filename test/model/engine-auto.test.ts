// The tensor engine's `auto`: webgpu only on a real GPU adapter and a model at least
// WEBGPU_AUTO_MIN_PARAMS large; a CPU fallback adapter (SwiftShader), no adapter or a small model keep
// the CPU order with the reason. The decision as a unit on injected probe results, then the real
// probe on SwiftShader in a child process (initEngine runs once per process).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { autoWebgpu, WEBGPU_AUTO_MIN_PARAMS } from '../../backend/model/engine.js';
import {
  adapterInfo,
  adapterName,
  SWIFTSHADER_ICD,
  vulkanDriverConfigured,
  type GpuAdapterInfo,
} from '../../backend/model/webgpu.js';
import { countParams, presetConfig } from '../../backend/model/config.js';
import { checkpointParams, describeRunModel, runModelParams } from '../../backend/model/run-model.js';
import { makeHfModel } from '../../tools/hf-model.js';

const h200: GpuAdapterInfo = {
  vendor: 'nvidia',
  architecture: 'hopper',
  description: 'NVIDIA H200',
  fallback: false,
  features: [],
};
const swiftshader: GpuAdapterInfo = {
  vendor: 'google',
  architecture: 'swiftshader',
  description: 'SwiftShader driver 5.0.0',
  fallback: true,
  features: [],
};
const large = countParams(presetConfig('large-100m', 512));
const tiny = countParams(presetConfig('tiny-0.4m', 512));

test('auto takes webgpu on a real GPU adapter for a model at or above the threshold', () => {
  const big = autoWebgpu({ adapter: h200 }, large);
  assert.equal(big.webgpu, true);
  assert.match(big.why, /GPU adapter and a model of 88M parameters \(at least 10M\)/);
  assert.equal(autoWebgpu({ adapter: h200 }, WEBGPU_AUTO_MIN_PARAMS).webgpu, true);
});

test('auto keeps the CPU engines on SwiftShader, without an adapter, and below the threshold, with the reason', () => {
  const fallback = autoWebgpu({ adapter: swiftshader }, large);
  assert.equal(fallback.webgpu, false);
  assert.match(fallback.why, /SwiftShader.*a CPU fallback, not a GPU/);
  const none = autoWebgpu({ adapter: null, why: 'Dawn found no GPU adapter (needs the Vulkan loader ...)' }, large);
  assert.deepEqual(none, { webgpu: false, why: 'Dawn found no GPU adapter (needs the Vulkan loader ...)' });
  const small = autoWebgpu({ adapter: h200 }, tiny);
  assert.equal(small.webgpu, false);
  assert.match(small.why, /0\.5M parameters are below 10M.*NVIDIA H200/);
  assert.equal(autoWebgpu({ adapter: h200 }, WEBGPU_AUTO_MIN_PARAMS - 1).webgpu, false);
  // A caller that does not know the size (tests, benches): the GPU is not known to win, so the CPU.
  const unsized = autoWebgpu({ adapter: h200 });
  assert.equal(unsized.webgpu, false);
  assert.match(unsized.why, /size was not given .*10M parameters or more; adapter nvidia hopper/);
});

test('the threshold sits between the presets where the CPU engine (small-3m) and the GPU (medium-25m) won a run step', () => {
  assert.ok(tiny < WEBGPU_AUTO_MIN_PARAMS);
  assert.ok(countParams(presetConfig('small-3m', 512)) < WEBGPU_AUTO_MIN_PARAMS);
  assert.ok(countParams(presetConfig('medium-25m', 512)) >= WEBGPU_AUTO_MIN_PARAMS);
});

test("runModelParams: a preset's count at the config's vocabulary, a checkpoint's from its config.json", () => {
  assert.equal(runModelParams({ model: { size: 'tiny-0.4m' } }), tiny);
  assert.equal(runModelParams({}), tiny, 'the default preset');
  assert.equal(
    runModelParams({ model: { size: 'small-3m' }, tokenizer: { vocab_size: 4096 } }),
    countParams(presetConfig('small-3m', 4096)),
  );
  assert.equal(runModelParams({ model: { size: 'no-such-size' } }), undefined);
  const root = mkdtempSync(join(tmpdir(), 'rft-engine-auto-'));
  try {
    const dir = makeHfModel(join(root, 'm'), {
      architecture: 'LlamaForCausalLM',
      tokenizer: 'llama3',
      hidden: 32,
      layers: 1,
      heads: 2,
      kvHeads: 1,
      intermediate: 64,
      tied: true,
      vocab: 300,
    });
    const expected = describeRunModel({ model: { checkpoint: dir } });
    assert.ok(expected?.parameters);
    // A checkpoint relative to the config file, as `rft run cfg.yaml` gives it.
    assert.equal(runModelParams({ model: { checkpoint: 'm' } }, join(root, 'cfg.yaml')), expected.parameters);
    assert.equal(runModelParams({ model: { checkpoint: join(root, 'missing') } }), undefined);
    // `rft model ... DIR`, `rft eval DIR`: the folder's own config.json.
    assert.equal(checkpointParams(dir), expected.parameters);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('vulkanDriverConfigured: a Vulkan ICD manifest or the env overrides on Linux; always elsewhere', () => {
  const root = mkdtempSync(join(tmpdir(), 'rft-icd-'));
  try {
    // Only dirs under root are searched (the homedir fallbacks are bypassed by the XDG vars).
    const env = {
      XDG_CONFIG_HOME: join(root, 'c'),
      XDG_CONFIG_DIRS: join(root, 'cd'),
      XDG_DATA_HOME: join(root, 'd'),
      XDG_DATA_DIRS: join(root, 'dd'),
    };
    const hasSystem = ['/usr/local/etc', '/etc'].some((d) => existsSync(join(d, 'vulkan', 'icd.d')));
    if (!hasSystem) assert.equal(vulkanDriverConfigured(env, 'linux'), false);
    assert.equal(vulkanDriverConfigured({ ...env, VK_ICD_FILENAMES: SWIFTSHADER_ICD }, 'linux'), true);
    assert.equal(vulkanDriverConfigured({ ...env, VK_DRIVER_FILES: '/x.json' }, 'linux'), true);
    mkdirSync(join(root, 'dd', 'vulkan', 'icd.d'), { recursive: true });
    writeFileSync(join(root, 'dd', 'vulkan', 'icd.d', 'nvidia_icd.json'), '{}');
    assert.equal(vulkanDriverConfigured(env, 'linux'), true);
    assert.equal(vulkanDriverConfigured({}, 'darwin'), true);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/** initEngine in auto in a fresh process; its EngineInfo. */
function autoEngine(
  env: Record<string, string>,
  modelParams: number,
): {
  backend: string;
  reason: string;
  tried: { backend: string; error: string }[];
} {
  const script = `import { initEngine } from './backend/model/engine.ts'; const i = await initEngine({ modelParams: ${modelParams} }); console.log(JSON.stringify(i));`;
  const base = { ...process.env };
  delete base.RFT_BACKEND;
  delete base.VK_ICD_FILENAMES;
  delete base.RFT_WEBGPU_SWIFTSHADER;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...base, RFT_LOG_LEVEL: 'warn', ...env },
    encoding: 'utf8',
  });
  return JSON.parse(out.trim().split('\n').at(-1)!);
}

test(
  'the real probe on SwiftShader: auto does not take it, and names it as the reason',
  {
    skip: existsSync(SWIFTSHADER_ICD) ? false : `no SwiftShader Vulkan driver at ${SWIFTSHADER_ICD}`,
  },
  () => {
    for (const env of <Record<string, string>[]>[
      { VK_ICD_FILENAMES: SWIFTSHADER_ICD },
      { RFT_WEBGPU_SWIFTSHADER: '1', RFT_BACKEND: 'auto' },
    ]) {
      const info = autoEngine(env, large);
      assert.notEqual(info.backend, 'webgpu');
      assert.equal(info.tried[0]?.backend, 'webgpu');
      assert.match(info.tried[0]!.error, /swiftshader.*a CPU fallback, not a GPU/i);
      assert.match(info.reason, /^fallback after: webgpu \(.*CPU fallback/);
    }
  },
);

test(
  'server/engine in auto names the adapter it passes over (SwiftShader), without starting an engine',
  {
    skip: existsSync(SWIFTSHADER_ICD) ? false : `no SwiftShader Vulkan driver at ${SWIFTSHADER_ICD}`,
  },
  async () => {
    const { engineSummary } = await import('../../backend/model/engine-summary.js');
    // Only SwiftShader's driver, so the answer is the same on a machine with a GPU.
    process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
    const s = await engineSummary({});
    assert.equal(s.requested, 'auto');
    assert.equal(s.engine, 'cpu');
    assert.match(s.detail, /^CPU: WebAssembly with .*; no GPU: google swiftshader .* - a CPU fallback, not a GPU$/);
  },
);

test("the adapter's name: Dawn's device where the driver reports no architecture (NVIDIA on Vulkan), SwiftShader unchanged", () => {
  // As Dawn reported them on an NVIDIA H200 (2026-11-27) and on SwiftShader here.
  const h200 = adapterInfo(
    { vendor: 'nvidia', architecture: '', device: 'nvidia-h200', description: 'NVIDIA: 580.159.04 580.159.4.0' },
    false,
    ['timestamp-query'],
  );
  assert.equal(adapterName(h200), 'nvidia nvidia-h200 (NVIDIA: 580.159.04 580.159.4.0)');
  assert.equal(h200.fallback, false);
  const ss = adapterInfo(
    {
      vendor: 'google',
      architecture: 'swiftshader',
      device: 'swiftshader-device-subzero-',
      description: 'SwiftShader driver 5.0.0',
    },
    false,
    [],
  );
  assert.equal(adapterName(ss), 'google swiftshader (SwiftShader driver 5.0.0) - a CPU fallback, not a GPU');
});
