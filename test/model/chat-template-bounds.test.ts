// Chat templates are untrusted input rendered for every prompt: a template that loops, builds a huge
// range or a huge string, or is itself huge, fails quickly with the file and field named instead of
// aborting V8 (range(1000000000)), hanging `rft model info` / generate / a run, or taking seconds and
// gigabytes to parse (a 30 MB template).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError } from '../../backend/core/errors.js';
import { encodePrompt, taskMessages } from '../../backend/model/chat.js';
import { loadTokenizer } from '../../backend/model/tokenizer/index.js';
import { BoundedTemplate, MAX_TEMPLATE_CHARS } from '../../backend/model/hf/bounded-template.js';
import { makeHfModel, tokenizerDir } from '../../tools/hf-model.js';

const root = mkdtempSync(join(tmpdir(), 'rft-tpl-bounds-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const QWEN_CONFIG = JSON.parse(readFileSync(join(tokenizerDir('qwen3'), 'tokenizer_config.json'), 'utf8')) as Record<
  string,
  unknown
>;

/** A Qwen tokenizer folder whose template is TEMPLATE, in chat_template.jinja or in tokenizer_config.json. */
function folder(name: string, template: string, where: 'jinja' | 'config' = 'jinja'): string {
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'tokenizer.json'), readFileSync(join(tokenizerDir('qwen3'), 'tokenizer.json')));
  const cfg = { ...QWEN_CONFIG, chat_template: where === 'config' ? template : undefined };
  writeFileSync(join(d, 'tokenizer_config.json'), JSON.stringify(cfg));
  if (where === 'jinja') writeFileSync(join(d, 'chat_template.jinja'), template);
  return d;
}

function refused(fn: () => unknown, file: string, field: string, message: RegExp, maxMs: number): void {
  const t0 = performance.now();
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof InputError, String(e));
    assert.ok(e.message.startsWith(`${file}: field '${field}': `), e.message);
    assert.match(e.message, message);
    return true;
  });
  const ms = performance.now() - t0;
  assert.ok(ms < maxMs, `refused after ${ms.toFixed(0)} ms (limit ${maxMs})`);
}

test('range(1000000000) is refused at load, naming chat_template.jinja (before: V8 aborted the process)', () => {
  const d = folder(
    'range',
    '{% for i in range(1000000000) %}x{% endfor %}{% for m in messages %}{{ m.content }}<|im_end|>{% endfor %}',
  );
  refused(
    () => loadTokenizer(d),
    join(d, 'chat_template.jinja'),
    'chat_template',
    /range\(\) of 1000000000 items is over the limit/,
    8000,
  );
});

test('a template that loops for ever is stopped by the deadline at load (before: rft model info / a run hung)', () => {
  const loop = '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}';
  const d = folder('loop', loop, 'config');
  refused(
    () => loadTokenizer(d),
    join(d, 'tokenizer_config.json'),
    'chat_template',
    /longer than the time limit/,
    15000,
  );
});

test('a template that passes the load probe but blows up on a long prompt fails that render with the file named', () => {
  // Doubles each long message 24 times (16M copies): the output cap stops it within a few MB.
  const t =
    '{% for m in messages %}{% set ns = namespace(s=m.content) %}{% if m.content|length > 100 %}{% for i in range(24) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{% endif %}<|im_start|>{{ m.role }}\n{{ ns.s }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}';
  const d = folder('grow', t);
  const tok = loadTokenizer(d);
  assert.ok(encodePrompt(tok, taskMessages('short')).length > 0);
  refused(
    () => encodePrompt(tok, taskMessages('x'.repeat(200))),
    join(d, 'chat_template.jinja'),
    'chat_template',
    /over \d+ characters \(the output limit\)/,
    8000,
  );
});

test('a 30 MB template is refused before it is parsed (before: 8 s and 1.4 GB), in either file', () => {
  const huge = '{{ messages[0].content }}' + 'x'.repeat(30 * 1024 * 1024);
  for (const where of ['jinja', 'config'] as const) {
    const d = folder(`huge-${where}`, huge, where);
    const file = join(d, where === 'jinja' ? 'chat_template.jinja' : 'tokenizer_config.json');
    refused(() => loadTokenizer(d), file, 'chat_template', new RegExp(`over the limit of ${MAX_TEMPLATE_CHARS}`), 5000);
  }
});

test('the bounded renderer gives @huggingface/jinja output for the real templates (Qwen3, Llama-3)', async () => {
  const { Template } = await import('@huggingface/jinja');
  for (const name of ['qwen3', 'llama3'] as const) {
    const t = JSON.parse(readFileSync(join(tokenizerDir(name), 'tokenizer_config.json'), 'utf8'))
      .chat_template as string;
    const items = {
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'héllo' },
        { role: 'assistant', content: 'hi' },
        { role: 'user', content: 'again?' },
      ],
      add_generation_prompt: true,
      bos_token: '<s>',
      eos_token: '</s>',
    };
    assert.equal(new BoundedTemplate(t).render(items), new Template(t).render(items), name);
  }
});

test('rft model info on a folder with a looping template exits with the file named', () => {
  const d = makeHfModel(join(root, 'model'), {
    architecture: 'Qwen2ForCausalLM',
    tokenizer: 'qwen3',
    hidden: 16,
    layers: 1,
    heads: 2,
    kvHeads: 1,
    intermediate: 24,
    tied: true,
  });
  writeFileSync(
    join(d, 'chat_template.jinja'),
    '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}',
  );
  const r = spawnSync(process.execPath, [join(repo, 'bin', 'rft.mjs'), 'model', 'info', d], {
    cwd: repo,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, RFT_FROM_SOURCE: '1' },
  });
  assert.notEqual(r.status, 0, r.stdout);
  assert.match(
    r.stderr,
    new RegExp(
      `${join(d, 'chat_template.jinja').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: field 'chat_template': rendering took longer than the time limit`,
    ),
  );
});
