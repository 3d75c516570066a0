// Tool calls parsed back from what the Qwen tokenizer decodes, the tool exchange as the Qwen template
// lays it out, and the weight switch between requests (no request answered by two versions).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HfTokenizer } from '../../../backend/model/hf/tokenizer.js';
import { parseToolCalls } from '../../../backend/explorer/openai-server/tool-parse.js';
import { renderPrompt, toolFormat } from '../../../backend/explorer/openai-server/render.js';
import { PolicyGate, type ServedPolicy } from '../../../backend/explorer/openai-server/policy.js';
import { tokenizerDir } from '../../../tools/hf-model.js';

const qwenDir = tokenizerDir('qwen3');
const qwen = new HfTokenizer(
  {
    tokenizer: JSON.parse(readFileSync(join(qwenDir, 'tokenizer.json'), 'utf8')),
    tokenizerConfig: JSON.parse(readFileSync(join(qwenDir, 'tokenizer_config.json'), 'utf8')),
  },
  qwenDir,
  {
    name: 'default',
    text: JSON.parse(readFileSync(join(qwenDir, 'tokenizer_config.json'), 'utf8')).chat_template,
    file: join(qwenDir, 'tokenizer_config.json'),
    field: 'chat_template',
  },
);

test('a Qwen tool call survives the decode the server does and is parsed into tool_calls', () => {
  assert.equal(toolFormat(qwen), 'qwen');
  const written = 'Let me add.\n<tool_call>\n{"name": "add", "arguments": {"a": 6, "b": 7}}\n</tool_call>';
  const text = qwen.decode(qwen.encode(written), { skipSpecial: true });
  const r = parseToolCalls(text, 'qwen');
  assert.equal(r.content, 'Let me add.');
  assert.equal(r.toolCalls.length, 1);
  assert.equal(r.toolCalls[0]!.function.name, 'add');
  assert.deepEqual(JSON.parse(r.toolCalls[0]!.function.arguments), { a: 6, b: 7 });
  assert.match(r.toolCalls[0]!.id, /^call_[0-9a-f]{24}$/);
  // Not JSON with a name: left in the content, as the model wrote it.
  const broken = '<tool_call>\n{"name": add}\n</tool_call>';
  assert.deepEqual(parseToolCalls(broken, 'qwen'), { content: broken, toolCalls: [] });
  // Llama-3.1's layout: a bare JSON object as the whole reply.
  const l = parseToolCalls('{"name": "add", "parameters": {"a": 1}}', 'llama3');
  assert.equal(l.content, null);
  assert.equal(l.toolCalls[0]!.function.arguments, '{"a":1}');
  assert.equal(parseToolCalls('{"name": "add"}', 'none').toolCalls.length, 0);
});

test('the tool exchange is laid out by the template: tools listed, the call and the result in their tags', () => {
  const ids = renderPrompt(
    qwen,
    [
      { role: 'user', content: 'What is 6 + 7?' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":6,"b":7}' } }],
      },
      { role: 'tool', content: '13', tool_call_id: 'c1' },
    ],
    [{ type: 'function', function: { name: 'add', parameters: { type: 'object' } } }],
  );
  const text = qwen.decode(ids);
  assert.match(text, /<tools>\n\{"type": "function", "function": \{"name": "add"/);
  assert.match(text, /<tool_call>\n\{"name": "add", "arguments": \{"a": 6, "b": 7\}\}\n<\/tool_call><\|im_end\|>/);
  assert.match(text, /<tool_response>\n13\n<\/tool_response><\|im_end\|>\n<\|im_start\|>assistant\n$/);
});

test('a weight switch waits for the requests in flight and holds new ones until it is applied', async () => {
  const policy = (version: number) => ({ model: { version } }) as unknown as ServedPolicy;
  const gate = new PolicyGate(policy(1), 'm');
  let release!: () => void;
  const inFlight = gate.use(async (p) => {
    const v0 = p.model.version;
    await new Promise<void>((r) => (release = r));
    return [v0, p.model.version];
  });
  const order: string[] = [];
  const switched = gate.switchTo(() => {
    order.push('switch');
    return policy(2);
  });
  const later = gate.use(async (p) => {
    order.push(`later v${p.model.version}`);
    return p.model.version;
  });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, [], 'neither the switch nor the later request ran while one was in flight');
  release();
  assert.deepEqual(await inFlight, [1, 1]);
  await switched;
  assert.equal(await later, 2);
  assert.deepEqual(order, ['switch', 'later v2']);
  assert.equal(gate.version, 2);
});
