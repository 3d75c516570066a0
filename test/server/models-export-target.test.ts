// models/export never writes over the workspace (issue 24): `out: "."` emptied the workspace and
// `out: "src"` deleted the user's sources. Now the workspace root, .rft, a run's folder and the
// folders holding one are refused with or without force; a non-empty folder needs `force: true`,
// which keeps every file but the export's own.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { ErrorCodes } from '../../backend/core/protocol.js';
import { makeHfModel } from '../../tools/hf-model.js';
import { spawnServe, type Served } from '../../tools/spawn-serve.js';

let s: Served;
const ws = mkdtempSync(join(tmpdir(), 'rft-models-export-'));
let ck: string;
let runDir: string;

before(async () => {
  ck = makeHfModel(join(ws, 'ckpts', 'llama'), {
    architecture: 'LlamaForCausalLM',
    tokenizer: 'llama3',
    hidden: 32,
    layers: 1,
    heads: 4,
    kvHeads: 2,
    intermediate: 48,
    tied: true,
  });
  mkdirSync(join(ws, 'src'));
  writeFileSync(join(ws, 'src', 'main.py'), 'print("mine")\n');
  const reg = await RunRegistry.open(ws);
  runDir = (await reg.create({ name: 'r', config: {}, id: 'r1' })).dir;
  mkdirSync(runDir, { recursive: true });
  writeFileSync(join(runDir, 'metrics.jsonl'), '');
  s = spawnServe(['--workspace', ws]);
});
after(async () => {
  await s.close();
  rmSync(ws, { recursive: true, force: true });
});

const refused = (code: number, re: RegExp) => (e: Error & { code?: number }) => e.code === code && re.test(e.message);

test('the workspace root, .rft, a run folder and its ancestors are refused even with force', async () => {
  const ex = (out: string) => s.request('models/export', { checkpoint: ck, format: 'hf', out, force: true });
  await assert.rejects(
    ex('.'),
    refused(ErrorCodes.Forbidden, /field 'out': .* is the workspace folder itself: choose a new folder/),
  );
  await assert.rejects(ex(ws), refused(ErrorCodes.Forbidden, /is the workspace folder itself/));
  await assert.rejects(ex('.rft'), refused(ErrorCodes.Forbidden, /\.rft folder or inside it/));
  await assert.rejects(ex('.rft/exports/x'), refused(ErrorCodes.Forbidden, /\.rft folder or inside it/));
  // A run folder kept outside .rft (the registry names where it is) and the folders above it.
  const reg = await RunRegistry.open(ws);
  const outside = join(ws, 'old-runs', 'r2');
  mkdirSync(outside, { recursive: true });
  const data = JSON.parse(readFileSync(reg.file, 'utf8')) as { runs: { dir: string }[] };
  data.runs.push({ ...data.runs[0]!, id: 'r2', dir: outside } as never);
  writeFileSync(reg.file, JSON.stringify(data));
  await assert.rejects(ex('old-runs'), refused(ErrorCodes.Forbidden, new RegExp(`holds the run folder ${outside}`)));
  await assert.rejects(ex('old-runs/r2/sub'), refused(ErrorCodes.Forbidden, /is inside the run folder/));
  assert.deepEqual(readdirSync(runDir), ['metrics.jsonl']);
  assert.deepEqual(readdirSync(outside), []);
});

test('a non-empty folder (src) is refused without force, naming it and force: true; with force the sources stay', async () => {
  await assert.rejects(
    s.request('models/export', { checkpoint: ck, format: 'gguf', out: 'src' }),
    refused(
      ErrorCodes.InvalidInput,
      new RegExp(
        `${join(ws, 'src')}: the folder is not empty \\(main\\.py\\): .* pass force: true to replace only the files this export writes \\(model\\.gguf\\)`,
      ),
    ),
  );
  assert.deepEqual(readdirSync(join(ws, 'src')), ['main.py']);
  const r = await s.request('models/export', { checkpoint: ck, format: 'gguf', out: 'src', force: true });
  assert.equal(r.out, join(ws, 'src', 'model.gguf'));
  assert.deepEqual(readdirSync(join(ws, 'src')).sort(), ['main.py', 'model.gguf']);
  assert.equal(readFileSync(join(ws, 'src', 'main.py'), 'utf8'), 'print("mine")\n');
  assert.deepEqual(
    readdirSync(ws).filter((n) => n.includes('.tmp-')),
    [],
  );
  // A file at `out` itself is refused whatever force says.
  writeFileSync(join(ws, 'model-notes'), 'mine');
  await assert.rejects(
    s.request('models/export', { checkpoint: ck, format: 'hf', out: 'model-notes', force: true }),
    refused(ErrorCodes.InvalidInput, /model-notes: a file of that name exists/),
  );
  assert.equal(readFileSync(join(ws, 'model-notes'), 'utf8'), 'mine');
});
