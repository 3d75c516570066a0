// A PEFT adapter_config.json with `"lora_alpha": 1e309` (issue 40, item 24): JSON reads it as
// Infinity, which passed `> 0` and was accepted. It is refused naming the file and the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePeftAdapterConfig } from '../../backend/model/lora.js';

const base = '{"peft_type": "LORA", "r": 4, "target_modules": ["q_proj"], "lora_alpha": ALPHA}';

test('lora_alpha of 1e309 (Infinity) is refused by file and field; a finite one is kept', () => {
  for (const alpha of ['1e309', '-1e309']) {
    const raw = JSON.parse(base.replace('ALPHA', alpha)) as Record<string, unknown>;
    assert.throws(
      () => parsePeftAdapterConfig(raw, '/m/adapter_config.json'),
      /^InputError: \/m\/adapter_config\.json: field 'lora_alpha': must be a positive finite number, got -?Infinity \(.*\)$/m,
    );
  }
  const ok = parsePeftAdapterConfig(JSON.parse(base.replace('ALPHA', '16')) as Record<string, unknown>, 'a.json');
  assert.equal(ok.alpha, 16);
});
