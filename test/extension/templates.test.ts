// Every domain template the "New Taskset" command writes passes the backend's taskset validator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTaskset } from '../../backend/buffer/taskset/load.js';
import { DOMAINS, tasksetTemplate } from '../../src/templates.js';

for (const { domain } of DOMAINS) {
  test(`the ${domain} template is a valid taskset`, () => {
    const text = tasksetTemplate(domain);
    const r = parseTaskset(text, `tasksets/${domain}.jsonl`);
    assert.deepEqual(r.errors, []);
    assert.equal(r.tasks.length, text.trim().split('\n').length);
    assert.ok(r.tasks.every((t) => t.domain === domain));
  });
}

// "Start Training" -> "Create a config from the template…" for files with other field names.
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { loadTasks } from '../../backend/coordinator/setup/tasks.js';
import { configTemplate, inferFormat } from '../../src/templates.js';

test('inferFormat: the names other datasets use become the format mapping; schema names need none', () => {
  assert.deepEqual(inferFormat({ uid: 'w1', question: '1+2=', solution: '#### 3' }), {
    prompt_key: 'question',
    response_key: 'solution',
    id_key: 'uid',
  });
  assert.deepEqual(inferFormat({ question: '1+2=', completion: '3' }, 'expert'), {
    prompt_key: 'question',
    response_key: 'completion',
  });
  assert.equal(inferFormat({ id: 'a', prompt: 'p', answer: '1' }), undefined);
  assert.equal(
    inferFormat({ id: 'a', messages: [], answer: '1' }),
    undefined,
    'a multi-turn record has no prompt field',
  );
  // One source field fills one target only (`output` could be an answer or a response).
  assert.deepEqual(inferFormat({ instruction: 'x', output: 'y' }), {
    prompt_key: 'instruction',
    response_key: 'output',
  });
});

test('the template for a taskset, eval file and experts with foreign names loads all three as the run does (MIX over the experts)', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-tpl-own-'));
  mkdirSync(join(ws, 'tasksets'));
  const task = (uid: string, a: number, b: number) =>
    JSON.stringify({ uid, question: `${a}+${b}=`, solution: `${a} plus ${b} #### ${a + b}` });
  writeFileSync(
    join(ws, 'tasksets', 'math-words.jsonl'),
    [task('w1', 1, 2), task('w2', 3, 4), task('w3', 2, 2)].join('\n') + '\n',
  );
  writeFileSync(join(ws, 'tasksets', 'math-eval.jsonl'), [task('e1', 2, 3), task('e2', 1, 1)].join('\n') + '\n');
  writeFileSync(join(ws, 'experts.jsonl'), JSON.stringify({ question: '1+2=', completion: '3' }) + '\n');
  const first = { uid: 'w1', question: '1+2=', solution: '#### 3' };
  const text = configTemplate('tasksets/math-words.jsonl', 'math', undefined, {
    format: inferFormat(first),
    eval: { path: 'tasksets/math-eval.jsonl', format: inferFormat(first) },
    experts: { path: 'experts.jsonl', format: inferFormat({ question: '', completion: '' }, 'expert') },
  });
  writeFileSync(join(ws, 'train.rft.yaml'), text);
  const cfg = loadRunConfig(join(ws, 'train.rft.yaml'));
  assert.equal(cfg.algorithm.name, 'mix');
  assert.equal(cfg.monitor.eval_every, 10);
  const pools = await loadTasks(cfg);
  assert.deepEqual(
    pools.train.map((t) => [t.id, t.prompt, t.answer]),
    [
      ['w1', '1+2=', '3'],
      ['w2', '3+4=', '7'],
      ['w3', '2+2=', '4'],
    ],
  );
  assert.deepEqual(
    pools.eval.map((t) => t.id),
    ['e1', 'e2'],
  );
  assert.equal(pools.experts.length, 1);
});

test('a generated config is named after its taskset and model, never a name a run or config already has', async () => {
  const { templateRunName } = await import('../../src/templates.js');
  assert.equal(templateRunName('tasksets/Math Words.jsonl', 'Qwen/Qwen2-0.5B', []), 'math-words-qwen-qwen2-0.5b');
  assert.equal(templateRunName('data/gsm.csv', 'tiny-0.4m', ['gsm-tiny-0.4m', 'gsm-tiny-0.4m-2']), 'gsm-tiny-0.4m-3');
  assert.match(configTemplate('tasksets/math.jsonl', 'math', undefined, {}, [], 'math-tiny'), /^name: math-tiny$/m);
});
