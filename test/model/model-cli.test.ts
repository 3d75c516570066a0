// `rft model info | generate | export` on a Hugging Face folder made here (the llama.cpp test covers
// `score` and the gguf export): what info reports, generate applying the model's chat template,
// export refusing what it cannot do by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint, saveCheckpoint } from '../../backend/model/checkpoint.js';
import { countParams } from '../../backend/model/config.js';
import { encodePrompt, taskMessages } from '../../backend/model/chat.js';
import { generate } from '../../backend/model/generate.js';
import { makeLoraConfig } from '../../backend/model/lora.js';
import { makeHfModel } from '../../tools/hf-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-model-cli-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const dir = makeHfModel(join(root, 'llama'), {
  architecture: 'LlamaForCausalLM',
  tokenizer: 'llama3',
  hidden: 32,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  headDim: 12,
  intermediate: 48,
  tied: false,
  dtype: 'BF16',
});

function rft(...args: string[]): { out: string; code: number; err: string } {
  try {
    return {
      out: execFileSync(process.execPath, ['bin/rft.mjs', ...args], {
        encoding: 'utf8',
        env: { ...process.env, RFT_FROM_SOURCE: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
      code: 0,
      err: '',
    };
  } catch (e) {
    const x = e as { status: number; stdout: string; stderr: string };
    return { out: x.stdout, code: x.status, err: x.stderr };
  }
}
const lastJson = (s: string) => JSON.parse(s.trim().split('\n').pop()!) as Record<string, unknown>;

test('rft model info: architecture, parameters, dtype, shape, tokenizer and chat template', () => {
  const info = lastJson(rft('model', 'info', dir).out);
  const ck = loadCheckpoint(dir);
  assert.equal(info.architecture, 'LlamaForCausalLM');
  assert.equal(info.parameters, countParams(ck.model.config));
  assert.equal(info.dtype, 'BF16');
  assert.equal(info.headDim, 12);
  assert.equal(info.tiedEmbeddings, false);
  assert.equal(info.lora, null);
  const tok = info.tokenizer as { kind: string; vocab: number; eos: number };
  assert.equal(tok.kind, 'hf');
  assert.equal(tok.vocab, ck.tokenizer!.vocabSize);
  assert.match(String(info.chatTemplate), /start_header_id/, "Llama-3's own template");
  ck.model.dispose();
});

test('rft model generate: the prompt goes through the chat template; greedy output equals generate() here', async () => {
  const res = lastJson(rft('model', 'generate', dir, '--prompt', 'Say hi.', '--max-new-tokens', '6').out) as {
    prompt_tokens: number;
    tokens: number[];
    text: string;
  };
  const ck = loadCheckpoint(dir);
  const tok = ck.tokenizer!;
  const ids = encodePrompt(tok, taskMessages('Say hi.'));
  assert.equal(res.prompt_tokens, ids.length);
  // The template's header tokens are in the prompt: <|start_header_id|>user<|end_header_id|>.
  assert.ok(tok.decode(ids).includes('<|start_header_id|>user<|end_header_id|>') || ids.includes(128006));
  const [g] = await generate(ck.model, tok, [ids], { maxNewTokens: 6, temperature: 0, seed: 0 });
  assert.deepEqual(res.tokens, g!.tokens);
  assert.equal(res.tokens.length, 6);
  ck.model.dispose();
});

test('rft model export: peft needs a LoRA checkpoint; a LoRA checkpoint exports peft; bad format and dtype refused', async () => {
  const peftOut = join(root, 'peft-none');
  const r = rft('model', 'export', dir, '--format', 'peft', '--out', peftOut);
  assert.notEqual(r.code, 0);
  assert.match(r.err, /no LoRA adapters/);
  assert.match(
    rft('model', 'export', dir, '--format', 'onnx', '--out', peftOut).err,
    /--format must be hf, peft or gguf/,
  );
  assert.match(
    rft('model', 'export', dir, '--format', 'hf', '--dtype', 'f16', '--out', peftOut).err,
    /f16 applies to gguf only/,
  );
  assert.match(
    rft('model', 'export', dir, '--format', 'hf', '--dtpye', 'f16', '--out', peftOut).err,
    /unknown flag --dtpye: did you mean --dtype\?/,
  );
  const ck = loadCheckpoint(dir);
  ck.model.addLora(makeLoraConfig({ rank: 2 }));
  const loraCk = await saveCheckpoint(
    ck.model,
    join(root, 'lora-ck'),
    { version: 1, base_model: 'meta-llama/Llama-3.2-1B' },
    ck.tokenizer,
  );
  ck.model.dispose();
  const info = lastJson(rft('model', 'info', loraCk).out) as { lora: { rank: number; adapterParameters: number } };
  assert.equal(info.lora.rank, 2);
  // Per layer, rank 2: q, o, gate, up, down move 32 <-> 48 (r * (in + out) each), k and v 32 -> 24.
  assert.equal(info.lora.adapterParameters, 2 * (5 * 2 * (32 + 48) + 2 * 2 * (32 + 24)));
  const out = lastJson(rft('model', 'export', loraCk, '--format', 'peft', '--out', join(root, 'peft')).out);
  assert.equal(out.format, 'peft');
  assert.ok(existsSync(join(root, 'peft', 'adapter_model.safetensors')));
});
