// A run from a model folder as transformers 4.4x+ saves it: the chat template only in
// chat_template.jinja (none in tokenizer_config.json), and a named template chosen with
// model.chat_template. Before, such a folder scored but the run stopped at its first prompt with
// "this model has no chat_template in tokenizer_config.json". The run's prompts are laid out by the
// chosen template, in the rollout worker threads too (one_step_off in one process), and the run's
// folder and checkpoints carry it as chat_template.jinja.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { makeExampleModel } from '../../configs/examples/hf-lora/make-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-hf-chat-run-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const EXAMPLE = join('configs', 'examples', 'hf-lora');
// Qwen's layout with a marker, so the prompts show which template laid them out.
const BRIEF =
  '{% for m in messages %}<|im_start|>{{ m.role }} (brief)\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}';

test('a run from a folder with chat_template.jinja and a named template (model.chat_template) lays out every prompt with it and carries it', async () => {
  const ex = join(root, 'ex');
  mkdirSync(ex);
  for (const f of ['train.jsonl', 'experts.jsonl', 'eval.csv']) copyFileSync(join(EXAMPLE, f), join(ex, f));
  const hf = makeExampleModel(join(ex, 'model'));
  const tc = JSON.parse(readFileSync(join(hf, 'tokenizer_config.json'), 'utf8'));
  writeFileSync(join(hf, 'chat_template.jinja'), tc.chat_template);
  delete tc.chat_template;
  writeFileSync(join(hf, 'tokenizer_config.json'), JSON.stringify(tc));
  mkdirSync(join(hf, 'additional_chat_templates'));
  writeFileSync(join(hf, 'additional_chat_templates', 'brief.jinja'), BRIEF);
  writeFileSync(
    join(ex, 'config.yaml'),
    `name: chat-template
seed: 1
model: { checkpoint: model, chat_template: brief, lora: { rank: 4, alpha: 8 } }
taskset: { path: train.jsonl, format: { id_key: qid, prompt_key: question, response_key: solution } }
eval: { path: eval.csv, format: { prompt_key: q, response_key: target } }
experts: { path: experts.jsonl, format: { prompt_key: question, response_key: demo } }
workflow: { name: single_turn, reward: exact_match }
explorer: { tasks_per_step: 2, repeat_times: 2, sampling: { max_new_tokens: 4, temperature: 1 }, eval_sampling: { max_new_tokens: 4 } }
trainer: { batch_size: 4 }
buffer: { storage: sqlite, max_staleness: 1 }
placement: memory
synchronizer: { schedule: one_step_off }
stages:
  - { name: warmup, algorithm: { name: sft }, steps: 1, batch_size: 4, lr: 0.01 }
  - { name: rl, algorithm: { name: grpo }, steps: 2, lr: 0.01 }
`,
  );
  const cfg = loadRunConfig(join(ex, 'config.yaml'));
  const s = await runJob({ config: cfg, workspace: join(root, 'ws'), runId: 'ct' });
  assert.equal(s.trainer_steps, 3);

  const store = await openStore(join(s.run_dir, 'buffer.db'));
  const exps = await store.list({ runId: 'ct', limit: 1000 });
  await store.close();
  const rollouts = exps.filter((e) => e.source === 'usual');
  assert.ok(rollouts.length >= 4, `${rollouts.length} rollouts`);
  const final = loadCheckpoint(s.checkpoint as string);
  const tok = final.tokenizer!;
  for (const e of [...rollouts, ...exps.filter((x) => x.source === 'expert')]) {
    assert.match(
      tok.decode(e.promptTokens),
      /^<\|im_start\|>user \(brief\)\n[\s\S]*<\|im_end\|>\n<\|im_start\|>assistant\n$/,
      e.id,
    );
  }
  // The run folder and its checkpoints carry the chosen template where transformers reads it first.
  assert.equal(readFileSync(join(s.run_dir, 'chat_template.jinja'), 'utf8'), BRIEF);
  assert.equal(readFileSync(join(s.checkpoint as string, 'chat_template.jinja'), 'utf8'), BRIEF);
  final.model.dispose();
});
