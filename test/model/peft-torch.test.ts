// Independent check of the PEFT export: test/model/peft_check.py (PyTorch, no `peft` package, no
// code of this project) reads the base model and adapter_model.safetensors + adapter_config.json by
// hand, applies PEFT's W' = W + (alpha / r) B @ A under PEFT's tensor names and scores a text; its
// log-probs must equal `rft model score` on this project's merged HF export within 1e-4.
// Skipped with the reason when /usr/bin/python3 has no torch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tf, initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { makeLoraConfig } from '../../backend/model/lora.js';
import { exportHf } from '../../backend/model/export/hf.js';
import { exportPeft } from '../../backend/model/export/peft.js';
import { externalWeightsAvailable } from '../../backend/model/external-weights.js';
import { makeHfModel, type HfModelSpec } from '../../tools/hf-model.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';

const PY = '/usr/bin/python3';
const probe = spawnSync(PY, ['-c', 'import torch'], { encoding: 'utf8' });
const skip =
  probe.status === 0
    ? false
    : `${PY} with torch is not available (${(probe.error?.message ?? probe.stderr ?? '').trim().split('\n').pop()})`;

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-peft-torch-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const TEXT = 'LoRA adapters, checked by hand: 7 * 6 = 42, and the fox jumps over the dog again.';

function rftScore(dir: string): { ids: number[]; logprobs: number[] } {
  const out = execFileSync(process.execPath, ['bin/rft.mjs', 'model', 'score', dir, '--text', TEXT], {
    encoding: 'utf8',
    env: { ...process.env, RFT_FROM_SOURCE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return JSON.parse(out.trim().split('\n').pop()!) as { ids: number[]; logprobs: number[] };
}

function torchScore(base: string, adapter: string, ids: number[]): number[] {
  const out = execFileSync(PY, [join('test', 'model', 'peft_check.py'), base, adapter, JSON.stringify(ids)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return (JSON.parse(out.trim().split('\n').pop()!) as { logprobs: number[] }).logprobs;
}

const CASES: [string, HfModelSpec, string[], boolean][] = [
  [
    'Qwen2 (biases, tied head), all seven projections, adapters trained outside the heap',
    {
      architecture: 'Qwen2ForCausalLM',
      tokenizer: 'qwen3',
      hidden: 32,
      layers: 2,
      heads: 4,
      kvHeads: 2,
      intermediate: 48,
      tied: true,
    },
    ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
    true,
  ],
  [
    'Llama-3 (rope_scaling llama3, head_dim 12, untied, bf16 shards), q/v/down only',
    {
      architecture: 'LlamaForCausalLM',
      tokenizer: 'llama3',
      hidden: 32,
      layers: 2,
      heads: 4,
      kvHeads: 2,
      headDim: 12,
      intermediate: 48,
      tied: false,
      ropeTheta: 500000,
      ropeScaling: {
        rope_type: 'llama3',
        factor: 8,
        low_freq_factor: 1,
        high_freq_factor: 4,
        original_max_position_embeddings: 64,
      },
      dtype: 'BF16',
      shards: 2,
    },
    ['q_proj', 'v_proj', 'down_proj'],
    false,
  ],
];

for (const [label, spec, targets, outside] of CASES) {
  test(
    `PEFT export applied by hand in PyTorch = rft model score on the merged HF export: ${label}`,
    { skip },
    async (t) => {
      const base = makeHfModel(join(root, spec.architecture), spec);
      const external = outside && externalWeightsAvailable();
      const model = loadCheckpoint(base, { external }).model.addLora(
        makeLoraConfig({ rank: 4, alpha: 12, target_modules: targets as never }),
        9,
      );
      // Non-zero B (and A from its seed): the adapters move the log-probs well past the tolerance.
      for (const [n, v] of model.adapters)
        if (n.includes('lora_B')) v.assign(tf.randomNormal(v.shape, 0, 0.4, 'float32', 21));
      const peft = await exportPeft(model, join(root, `${spec.architecture}-peft`), base);
      const hf = await exportHf(model, loadCheckpoint(base).tokenizer, join(root, `${spec.architecture}-hf`));
      model.dispose();

      const ours = rftScore(hf);
      assert.ok(ours.ids.length > 10 && ours.logprobs.length === ours.ids.length - 1);
      const theirs = torchScore(base, peft, ours.ids);
      assert.equal(theirs.length, ours.logprobs.length);
      // torch in float64 is the exact value; ours is one f32 forward of it.
      const d = assertF32Close(ours.logprobs, theirs, ULPS.forward, 'PEFT by hand (torch float64) vs rft model score');
      t.diagnostic(
        `max |log-prob diff| PEFT by hand (torch float64) vs rft model score: ${d.toExponential(2)} over ${theirs.length} tokens`,
      );
      // The adapters matter: the base alone scores differently by far more than the tolerance.
      const plain = rftScore(base);
      const moved = Math.max(...plain.logprobs.map((x, i) => Math.abs(x - ours.logprobs[i]!)));
      assert.ok(moved > 0.05, `adapters moved the log-probs by ${moved}`);
    },
  );
}
