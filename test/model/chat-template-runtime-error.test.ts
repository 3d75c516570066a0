// A chat template that raises while rendering (issue 40, item 24): its raise_exception() reached the
// user as a bare error naming no file. It is now an input error at the template's file and field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../../backend/core/errors.js';
import { HfTokenizer } from '../../backend/model/hf/tokenizer.js';
import { tokenizerDir } from '../../tools/hf-model.js';

test("a template's raise_exception is an input error naming the template's file", () => {
  const d = mkdtempSync(join(tmpdir(), 'rft-template-raise-'));
  cpSync(tokenizerDir('qwen3'), d, { recursive: true });
  writeFileSync(
    join(d, 'chat_template.jinja'),
    "{% if messages|length > 2 %}{{ raise_exception('only one exchange, please') }}{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}",
  );
  const tok = HfTokenizer.fromDir(d);
  const turns = [
    { role: 'user' as const, content: 'a' },
    { role: 'assistant' as const, content: 'b' },
    { role: 'user' as const, content: 'c' },
  ];
  assert.throws(
    () => tok.renderChat(turns, true),
    (e: Error) => {
      assert.ok(e instanceof InputError, `${e.name}: ${e.message}`);
      assert.ok(e.message.startsWith(join(d, 'chat_template.jinja')), e.message);
      assert.match(e.message, /chat template '.*' failed: .*only one exchange, please/);
      return true;
    },
  );
});
