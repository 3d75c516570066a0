// A FIFO (named pipe) in place of model.safetensors, tokenizer.json or config.json (issue 24, low):
// the open waited for a writer that never came and `rft model info` / a run hung with no message.
// Now such a file is refused by name at once. The loads run in a child with a deadline, so a
// regression fails the test instead of hanging the suite.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { saveCheckpoint } from '../../backend/model/checkpoint.js';
import { tokenizerDir } from '../../tools/hf-model.js';

const root = mkdtempSync(join(tmpdir(), 'rft-special-files-'));
const good = join(root, 'v1');
const hasMkfifo = spawnSync('mkfifo', ['--version']).status === 0;

/** Runs `code` (an ES module body with `dir` defined) in a child; its stdout, or a timeout. */
function inChild(code: string, dir: string): { out: string; timedOut: boolean; status: number | null } {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', `const dir = ${JSON.stringify(dir)};\n${code}`],
    {
      cwd: resolve(import.meta.dirname, '..', '..'),
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, RFT_LOG_LEVEL: 'error' },
    },
  );
  return {
    out: (r.stdout ?? '') + (r.stderr ?? ''),
    timedOut: r.error !== undefined && /ETIMEDOUT/.test(String(r.error)),
    status: r.status,
  };
}

function withFifo(src: string, name: string): string {
  const d = mkdtempSync(join(root, 'c-'));
  cpSync(src, d, { recursive: true });
  rmSync(join(d, name));
  assert.equal(spawnSync('mkfifo', [join(d, name)]).status, 0);
  return d;
}

const LOAD_CK = `const { loadCheckpoint } = await import('./backend/model/checkpoint.ts');
try { loadCheckpoint(dir); console.log('LOADED'); } catch (e) { console.log('ERROR ' + e.message); }`;

test(
  'a FIFO in place of model.safetensors or config.json is refused by name, at once',
  { skip: !hasMkfifo && 'no mkfifo' },
  async () => {
    await initEngine();
    const m = new Transformer(
      makeConfig({ vocabSize: 300, dModel: 16, nLayers: 2, nHeads: 2, nKvHeads: 1, dFF: 24, maxSeqLen: 32 }),
      1,
    );
    await saveCheckpoint(m, good, { version: 1, step: 3, stage_index: 1 });
    m.dispose();
    for (const name of ['model.safetensors', 'config.json']) {
      const d = withFifo(good, name);
      const r = inChild(LOAD_CK, d);
      assert.equal(r.timedOut, false, `loading with a FIFO ${name} hung`);
      assert.ok(r.out.includes(`ERROR ${join(d, name)}: is a FIFO (named pipe), not a file`), r.out);
    }
  },
);

test('a FIFO in place of tokenizer.json is refused by name, at once', { skip: !hasMkfifo && 'no mkfifo' }, () => {
  const d = withFifo(tokenizerDir('qwen3'), 'tokenizer.json');
  const r = inChild(
    `const { loadTokenizer } = await import('./backend/model/tokenizer/io.ts');
try { loadTokenizer(dir); console.log('LOADED'); } catch (e) { console.log('ERROR ' + e.message); }`,
    d,
  );
  assert.equal(r.timedOut, false, 'loading a FIFO tokenizer.json hung');
  assert.ok(r.out.includes(`ERROR ${join(d, 'tokenizer.json')}: is a FIFO (named pipe), not a file`), r.out);
});
