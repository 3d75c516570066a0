// Chat templates where transformers saves them: chat_template.jinja beside tokenizer_config.json
// (transformers >= 4.43), a list of {name, template} in tokenizer_config.json, a template named by
// `model.chat_template` (or a .jinja file it points to); generation_config.json's eos ids; and the
// template files carried into the run's tokenizer, checkpoints and HF exports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint, saveCheckpoint } from '../../backend/model/checkpoint.js';
import { exportHf } from '../../backend/model/export/hf.js';
import { encodePrompt, stopTokens, taskMessages } from '../../backend/model/chat.js';
import { loadTokenizer, saveTokenizer } from '../../backend/model/tokenizer/index.js';
import type { HfTokenizer } from '../../backend/model/hf/tokenizer.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { resolveConfigPaths } from '../../backend/coordinator/setup/config-paths.js';
import { makeTokenizer } from '../../backend/coordinator/setup/model.js';
import { makeHfModel, tokenizerDir } from '../../tools/hf-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-chat-tpl-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

const QWEN_CONFIG = JSON.parse(readFileSync(join(tokenizerDir('qwen3'), 'tokenizer_config.json'), 'utf8')) as Record<
  string,
  unknown
>;
const QWEN_TEMPLATE = QWEN_CONFIG.chat_template as string;
const TOOL_TEMPLATE =
  '{% for m in messages %}[{{ m.role }}] {{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}';
const MSGS = taskMessages('What is 6 * 7?', 'Be brief.');
const render = (t: string, gen = true) =>
  new Template(t).render({ messages: MSGS, add_generation_prompt: gen, bos_token: '', eos_token: '<|im_end|>' });

/** A Qwen tokenizer folder with tokenizer_config.json's chat_template replaced (undefined: removed). */
function qwenFolder(name: string, chatTemplate: unknown, files: Record<string, string> = {}): string {
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'tokenizer.json'), readFileSync(join(tokenizerDir('qwen3'), 'tokenizer.json')));
  const cfg = { ...QWEN_CONFIG };
  if (chatTemplate === undefined) delete cfg.chat_template;
  else cfg.chat_template = chatTemplate;
  writeFileSync(join(d, 'tokenizer_config.json'), JSON.stringify(cfg));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(d, rel, '..'), { recursive: true });
    writeFileSync(join(d, rel), text);
  }
  return d;
}

test('chat_template.jinja beside tokenizer_config.json (transformers >= 4.43) is the template', () => {
  const d = qwenFolder('jinja', undefined, { 'chat_template.jinja': QWEN_TEMPLATE });
  // Before: "this model has no chat_template in tokenizer_config.json" at the first prompt of a run.
  const tok = loadTokenizer(d) as HfTokenizer;
  assert.deepEqual(encodePrompt(tok, MSGS), tok.encode(render(QWEN_TEMPLATE)));
  assert.equal(tok.endOfTurnId, 151645, '<|im_end|> found after an assistant turn');
  assert.deepEqual(tok.templateSource, {
    file: join(d, 'chat_template.jinja'),
    field: 'chat_template',
    name: 'default',
  });
  // It wins over tokenizer_config.json's, as in transformers.
  const both = loadTokenizer(
    qwenFolder('jinja-wins', TOOL_TEMPLATE, { 'chat_template.jinja': QWEN_TEMPLATE }),
  ) as HfTokenizer;
  assert.equal(both.chatTemplate, QWEN_TEMPLATE);
});

test("a list of {name, template}: 'default' unless another is named; unknown names and bad entries named by file and field", () => {
  const list = [
    { name: 'default', template: QWEN_TEMPLATE },
    { name: 'tool_use', template: TOOL_TEMPLATE },
  ];
  const d = qwenFolder('list', list);
  // Before: "only a single template string is supported".
  const def = loadTokenizer(d);
  assert.deepEqual(encodePrompt(def, MSGS), def.encode(render(QWEN_TEMPLATE)));
  const tool = loadTokenizer(d, { chatTemplate: 'tool_use' });
  assert.deepEqual(encodePrompt(tool, MSGS), tool.encode(render(TOOL_TEMPLATE)));
  assert.throws(
    () => loadTokenizer(d, { chatTemplate: 'tool_uses' }),
    (e: Error) => {
      assert.ok(
        e.message.startsWith(
          `${join(d, 'tokenizer_config.json')}: field 'chat_template': no chat template named 'tool_uses' (did you mean 'tool_use'?)`,
        ),
        e.message,
      );
      return true;
    },
  );
  assert.throws(
    () => loadTokenizer(qwenFolder('list-bad', [{ name: 'default' }])),
    /tokenizer_config\.json: field 'chat_template\[0\]\.template'/,
  );
  assert.throws(
    () => loadTokenizer(qwenFolder('not-list', 42)),
    /tokenizer_config\.json: field 'chat_template': expected a template string or a list/,
  );
  // No default: loading works (scoring needs no template), a chat render says what to set.
  const noDefault = loadTokenizer(qwenFolder('list-nodefault', [{ name: 'tool_use', template: TOOL_TEMPLATE }]));
  assert.throws(
    () => encodePrompt(noDefault, MSGS),
    /no default chat template, only 'tool_use': name one with model\.chat_template/,
  );
  // transformers >= 4.52 keeps the named ones as additional_chat_templates/NAME.jinja.
  const extra = loadTokenizer(
    qwenFolder('extra', undefined, {
      'chat_template.jinja': QWEN_TEMPLATE,
      'additional_chat_templates/tool_use.jinja': TOOL_TEMPLATE,
    }),
    { chatTemplate: 'tool_use' },
  );
  assert.deepEqual(encodePrompt(extra, MSGS), extra.encode(render(TOOL_TEMPLATE)));
});

test('model.chat_template in a run config (a name or a .jinja file beside the config) reaches the run tokenizer, which saves it as chat_template.jinja', () => {
  const d = qwenFolder('cfg', [
    { name: 'default', template: QWEN_TEMPLATE },
    { name: 'tool_use', template: TOOL_TEMPLATE },
  ]);
  const cfgDir = join(root, 'cfgdir');
  mkdirSync(cfgDir, { recursive: true });
  writeFileSync(join(cfgDir, 'mine.jinja'), TOOL_TEMPLATE.replace('[assistant]', '[me]'));
  for (const [choice, want] of [
    ['tool_use', TOOL_TEMPLATE],
    ['mine.jinja', TOOL_TEMPLATE.replace('[assistant]', '[me]')],
  ] as const) {
    const v = validateRunConfig({
      taskset: { builtin: 'reverse' },
      workflow: {},
      model: { checkpoint: d, chat_template: choice },
    });
    assert.deepEqual(v.issues, []);
    const cfg = resolveConfigPaths(v.config!, join(cfgDir, 'run.rft.yaml'));
    const tok = makeTokenizer(cfg, []);
    assert.deepEqual(encodePrompt(tok, MSGS), tok.encode(render(want)));
    // The run's folder (and so its workers, resume and checkpoints) reads the chosen one without the config.
    const runDir = join(root, `run-${choice}`);
    saveTokenizer(tok, runDir);
    assert.equal(readFileSync(join(runDir, 'chat_template.jinja'), 'utf8'), want);
    const again = loadTokenizer(runDir);
    assert.deepEqual(encodePrompt(again, MSGS), encodePrompt(tok, MSGS));
  }
  const ownRaw = { taskset: { builtin: 'reverse' }, workflow: {}, model: { chat_template: 'tool_use' } };
  assert.throws(() => {
    // (The schema refuses it first, below; the run refuses it too, whatever built the config.)
    const cfg = validateRunConfig({ ...ownRaw, model: {} }).config!;
    return makeTokenizer({ ...cfg, model: { ...cfg.model, chat_template: 'tool_use' } }, ['abc']);
  }, /field 'model\.chat_template': a chat template is only for a Hugging Face model/);
  // `rft run --check` and the editor's Problems say so at the key before a run starts.
  assert.deepEqual(
    validateRunConfig(ownRaw).issues.map((i) => i.path),
    ['model.chat_template'],
  );
  assert.deepEqual(validateRunConfig({ ...ownRaw, model: { checkpoint: d, chat_template: 'tool_use' } }).issues, []);
});

test('generation_config.json: every eos_token_id (a number or a list) stops generation', () => {
  const d = join(root, 'llama');
  mkdirSync(d, { recursive: true });
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    writeFileSync(join(d, f), readFileSync(join(tokenizerDir('llama3'), f)));
  writeFileSync(
    join(d, 'generation_config.json'),
    JSON.stringify({ bos_token_id: 128000, eos_token_id: [128001, 128008, 128009] }),
  );
  const tok = loadTokenizer(d);
  for (const id of [128001, 128008, 128009]) assert.ok(stopTokens(tok).includes(id), `${id} in ${stopTokens(tok)}`);
  writeFileSync(join(d, 'generation_config.json'), JSON.stringify({ eos_token_id: 128009 }));
  assert.ok(stopTokens(loadTokenizer(d)).includes(128009));
});

test('checkpoints and HF exports carry chat_template.jinja and generation_config.json', async () => {
  const dir = makeHfModel(join(root, 'model'), {
    architecture: 'Qwen2ForCausalLM',
    tokenizer: 'qwen3',
    hidden: 16,
    layers: 1,
    heads: 2,
    kvHeads: 1,
    intermediate: 24,
    tied: true,
  });
  // As transformers 4.4x+ saves it: the template in its own file, not in tokenizer_config.json.
  const cfg = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));
  delete cfg.chat_template;
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(cfg));
  writeFileSync(join(dir, 'chat_template.jinja'), QWEN_TEMPLATE);
  const ck = loadCheckpoint(dir);
  const want = encodePrompt(ck.tokenizer!, MSGS);
  const saved = join(root, 'saved');
  await saveCheckpoint(ck.model, saved, { version: 1, step: 1, createdAt: 1 }, ck.tokenizer);
  const exported = await exportHf(ck.model, ck.tokenizer, join(root, 'exported'));
  ck.model.dispose();
  for (const out of [saved, exported]) {
    assert.equal(readFileSync(join(out, 'chat_template.jinja'), 'utf8'), QWEN_TEMPLATE, out);
    assert.ok(existsSync(join(out, 'generation_config.json')), out);
    const back = loadCheckpoint(out);
    assert.deepEqual(encodePrompt(back.tokenizer!, MSGS), want);
    assert.deepEqual(stopTokens(back.tokenizer!), stopTokens(ck.tokenizer!));
    back.model.dispose();
  }
});
