// Evaluate on a file the Tasksets view lists but no config section names (issue 40 item 4): read
// with the file's own mapping (`format`, as the editor reads it), not the run config's (was: "no
// valid record … 'input': required field is missing"); a config with a problem is refused with
// the problem listed (was: "invalid config, 1 problem(s):" and nothing after it). Real `rft eval`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessRunController, evalFailure } from '../../backend/server/process-run-controller.js';
import { makeHfModel } from '../../tools/hf-model.js';
import { oneLineReason } from '../../src/error-lines.js';

const CONFIG = `taskset:
  path: train.jsonl
  format: { prompt_key: input, response_key: label }
workflow:
  reward: math_answer
explorer:
  eval_sampling:
    max_new_tokens: 2
`;

test('evalFailure keeps the problems a `rft: … problem(s):` line heads', () => {
  const err = evalFailure("log line\nrft: invalid config, 1 problem(s):\n  /w/a.rft.yaml:3: field 'x': bad\n");
  assert.equal(err, "invalid config, 1 problem(s):\n  /w/a.rft.yaml:3: field 'x': bad");
  assert.equal(oneLineReason(`rft eval failed: ${err}`), "/w/a.rft.yaml:3: field 'x': bad");
  assert.equal(evalFailure('a\nb\nc\nd'), 'b\nc\nd');
});

test(
  'a CSV no config section names is read with its own mapping; a broken config names its problem',
  { timeout: 300_000 },
  async () => {
    const ws = mkdtempSync(join(tmpdir(), 'rft-eval-own-'));
    writeFileSync(join(ws, 'train.rft.yaml'), CONFIG);
    writeFileSync(join(ws, 'train.jsonl'), '{"input": "What is 1 + 1?", "label": "2"}\n');
    writeFileSync(join(ws, 'held.csv'), 'question,answer\nWhat is 2 + 2?,4\nWhat is 3 + 3?,6\nWhat is 1 + 4?,5\n');
    const ck = makeHfModel(join(ws, 'hf'), {
      architecture: 'Qwen2ForCausalLM',
      tokenizer: 'qwen3',
      hidden: 32,
      layers: 1,
      heads: 4,
      kvHeads: 2,
      intermediate: 64,
      tied: true,
    });
    const c = new ProcessRunController(ws);
    const config = join(ws, 'train.rft.yaml');
    const csv = join(ws, 'held.csv');
    // The config's mapping on a file it does not name: what the run's reading gave.
    await assert.rejects(c.evaluate(ck, csv, { config }), /'input': required field is missing/);
    const r = await c.evaluate(ck, csv, { config, format: { prompt_key: 'question', response_key: 'answer' } });
    assert.equal(r.tasks, 3);
    // The schema's own names: an empty mapping, not the config's.
    writeFileSync(join(ws, 'own.csv'), 'prompt,answer\nWhat is 2 + 2?,4\n');
    assert.equal((await c.evaluate(ck, join(ws, 'own.csv'), { config, format: {} })).tasks, 1);

    writeFileSync(config, CONFIG.replace('reward: math_answer', 'reward: math_answer\n  rewrd: 1'));
    const err = await c.evaluate(ck, csv, { config, format: {} }).then(
      () => assert.fail('a broken config evaluated'),
      (e: Error) => e.message,
    );
    assert.match(
      err,
      /^rft eval failed: .*invalid config, 1 problem\(s\):\n {2}.*train\.rft\.yaml: field 'workflow'.*'rewrd'$/,
    );
    // The notification's one line is the problem itself.
    assert.match(oneLineReason(err), /^\/.*train\.rft\.yaml: field 'workflow': .*'rewrd'$/);
  },
);
