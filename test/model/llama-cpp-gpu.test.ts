// llama.cpp on a GPU (issue 27 item 2): `explorer.llama_cpp_gpu` picks node-llama-cpp's prebuilt GPU
// builds (auto: the first that finds a device). CI has no GPU, and llama.cpp's Vulkan backend refuses
// SwiftShader (no 16-bit storage: "Unsupported device", then a crash of the process), so what is
// checked here is the guard around it: with SwiftShader as the only Vulkan device (ggml hides CPU-type
// devices unless GGML_VK_VISIBLE_DEVICES names them), auto samples on the CPU build with engine
// log-probs equal to this project's within 1e-3, and a named vulkan is an error before any load. The
// variables are set before node-llama-cpp loads, so they reach this process's Vulkan loader only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateRunConfig } from '../../backend/core/config.js';

/** Every field refused as unread: beside a section's fields or across sections (config-reads.ts), both by the schema. */
const refused = (raw: Record<string, unknown>) => validateRunConfig(raw).issues;
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { EMULATED_GPU, SWIFTSHADER_ICD } from '../../backend/model/webgpu.js';
import { LlamaCppRolloutModel, recomputeLogprobs } from '../../backend/explorer/llama-cpp-model.js';
import { makeHfModel, TINY_QWEN2 } from '../../tools/hf-model.js';

const vulkanBuild = (() => {
  try {
    createRequire(import.meta.url).resolve('@node-llama-cpp/linux-x64-vulkan');
    return process.platform === 'linux' && process.arch === 'x64';
  } catch {
    return false;
  }
})();
const skip = !vulkanBuild
  ? 'no prebuilt Vulkan build of llama.cpp for this platform'
  : !existsSync(SWIFTSHADER_ICD)
    ? `no SwiftShader Vulkan driver (${SWIFTSHADER_ICD}: apt-get install chromium)`
    : false;
if (!skip) {
  process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
  process.env.GGML_VK_VISIBLE_DEVICES = '0';
  if (!process.env.XDG_RUNTIME_DIR) {
    const xdg = join(tmpdir(), `rft-xdg-${process.pid}`);
    mkdirSync(xdg, { recursive: true });
    process.env.XDG_RUNTIME_DIR = xdg;
  }
}

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-llamacpp-gpu-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

test(
  'explorer.llama_cpp_gpu: auto passes over a Vulkan device that emulates a GPU (SwiftShader) and samples on the CPU build; vulkan named there is refused before any load',
  { skip },
  async () => {
    const dir = makeHfModel(join(root, 'm'), { ...TINY_QWEN2, seed: 3 });
    const ck = loadCheckpoint(dir);
    const tok = ck.tokenizer!;
    // The Vulkan build sees SwiftShader (what a machine with only a software Vulkan driver shows).
    const vk = await (await import('node-llama-cpp')).getLlama({ gpu: 'vulkan', build: 'never' });
    assert.ok((await vk.getGpuDeviceNames()).some((d) => EMULATED_GPU.test(d)));
    const named = new LlamaCppRolloutModel({ tokenizer: tok, maxSeqLen: ck.model.config.maxSeqLen, gpu: 'vulkan' });
    await assert.rejects(
      named.setWeights(ck.model, 1),
      /explorer\.llama_cpp_gpu: vulkan: vulkan: SwiftShader.*emulates a GPU on the CPU.*use auto or off/,
    );
    await named.close();
    const m = new LlamaCppRolloutModel({ tokenizer: tok, maxSeqLen: ck.model.config.maxSeqLen, gpu: 'auto' });
    try {
      await m.setWeights(ck.model, 1);
      assert.equal(m.metrics().gpu, false);
      const prompts = [tok.encode('Reverse: abc'), tok.encode('1 + 2 =')];
      const gens = await m.generate(prompts, { maxNewTokens: 10, temperature: 1, seed: 5, stopTokens: [] });
      for (const [i, g] of gens.entries()) {
        assert.equal(g.logprobsSource, 'engine');
        const ours = await recomputeLogprobs(ck.model, prompts[i]!, g.tokens, 1);
        const d = Math.max(...g.logprobs.map((x, j) => Math.abs(x - ours[j]!)));
        assert.ok(d < 1e-3, `difference ${d}`);
      }
    } finally {
      await m.close();
      ck.model.dispose();
    }
  },
);

test('explorer.llama_cpp_gpu: off samples on the CPU build', async () => {
  const dir = makeHfModel(join(root, 'c'), { ...TINY_QWEN2, layers: 1, seed: 4 });
  const ck = loadCheckpoint(dir);
  const m = new LlamaCppRolloutModel({ tokenizer: ck.tokenizer!, maxSeqLen: ck.model.config.maxSeqLen, gpu: 'off' });
  try {
    await m.setWeights(ck.model, 1);
    assert.equal(m.metrics().gpu, false);
    assert.deepEqual(m.metrics().gpu_devices, []);
  } finally {
    await m.close();
    ck.model.dispose();
  }
});

test('config: explorer.llama_cpp_gpu defaults to auto, takes auto | off | cuda | vulkan | metal, and is refused where no llama.cpp samples', () => {
  const base = {
    taskset: { builtin: 'reverse', size: 4 },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    stages: [{ name: 'g', algorithm: { name: 'grpo' }, steps: 1 }],
  };
  assert.equal(
    validateRunConfig({ ...base, explorer: { engine: 'llama-cpp' } }).config?.explorer.llama_cpp_gpu,
    'auto',
  );
  assert.equal(
    validateRunConfig({ ...base, explorer: { engine: 'auto', llama_cpp_gpu: 'cuda' } }).config?.explorer.llama_cpp_gpu,
    'cuda',
  );
  const bad = validateRunConfig({ ...base, explorer: { engine: 'llama-cpp', llama_cpp_gpu: 'rocm' } });
  assert.ok(!bad.config && bad.issues.some((i) => i.path === 'explorer.llama_cpp_gpu'), JSON.stringify(bad.issues));
  assert.deepEqual(refused({ ...base, explorer: { engine: 'llama-cpp', llama_cpp_gpu: 'vulkan' } }), []);
  assert.deepEqual(refused({ ...base, explorer: { engine: 'auto', llama_cpp_gpu: 'off' } }), []);
  const unread = refused({ ...base, explorer: { llama_cpp_gpu: 'vulkan' } });
  assert.deepEqual(
    unread.map((i) => i.path),
    ['explorer.llama_cpp_gpu'],
  );
  assert.match(unread[0]!.message, /engine native/);
  // The default, written back into a stored config, is not an unread field.
  assert.deepEqual(refused({ ...base, explorer: { engine: 'native', llama_cpp_gpu: 'auto' } }), []);
});
