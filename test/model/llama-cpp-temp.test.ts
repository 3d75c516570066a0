// The llama.cpp rollout engine writes a GGUF of each synced version into a folder of the system's temp
// directory (gigabytes a version for a real model). close() removes it; a process that ends without
// close() (an uncaught error, process.exit) must remove it too, or every crashed run leaves one behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../../tools/spawn-serve.js';

const root = mkdtempSync(join(tmpdir(), 'rft-llamacpp-temp-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const url = (p: string) => JSON.stringify(pathToFileURL(join(ROOT, p)).href);

test('a process that exits without close() leaves no GGUF folder behind', () => {
  const child = join(root, 'child.mts');
  writeFileSync(
    child,
    [
      `const { initEngine } = await import(${url('backend/model/engine.ts')});`,
      `const { loadCheckpoint } = await import(${url('backend/model/checkpoint.ts')});`,
      `const { LlamaCppRolloutModel } = await import(${url('backend/explorer/llama-cpp-model.ts')});`,
      `const { makeHfModel, TINY_QWEN2 } = await import(${url('tools/hf-model.ts')});`,
      'await initEngine();',
      `const ck = loadCheckpoint(makeHfModel(${JSON.stringify(join(root, 'model'))}, { ...TINY_QWEN2, seed: 1 }));`,
      'const m = new LlamaCppRolloutModel({ tokenizer: ck.tokenizer, maxSeqLen: ck.model.config.maxSeqLen, gpu: false });',
      'await m.setWeights(ck.model, 1);',
      'console.log(`GGUF ${m.ggufFile}`);',
      'process.exit(0);',
    ].join('\n'),
  );
  const r = spawnSync(process.execPath, ['--import', 'tsx', child], { cwd: ROOT, encoding: 'utf8', timeout: 240_000 });
  assert.equal(r.status, 0, r.stderr);
  const file = /^GGUF (.+)$/m.exec(r.stdout)?.[1];
  assert.ok(file && /rft-llama-cpp-/.test(file), r.stdout);
  assert.ok(!existsSync(join(file, '..')), `${join(file, '..')} is still there`);
});
