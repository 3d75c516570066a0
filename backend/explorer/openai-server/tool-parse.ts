// Tool calls written by the model, parsed back into OpenAI's `tool_calls`, per the layout its chat
// template taught it: Qwen2/Qwen3 `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks,
// Llama-3.1 a bare JSON object `{"name": ..., "parameters": {...}}` as the whole reply. A block
// that is not valid JSON with a name stays in the content: the client sees what the model wrote.
import { randomBytes } from 'node:crypto';
import type { ApiToolCall } from './request.js';

export type ToolFormat = 'qwen' | 'llama3' | 'none';

export interface ParsedReply {
  content: string | null;
  toolCalls: ApiToolCall[];
}

function call(name: unknown, args: unknown): ApiToolCall | undefined {
  if (typeof name !== 'string' || !name) return undefined;
  const a = args === undefined ? {} : args;
  return {
    id: `call_${randomBytes(12).toString('hex')}`,
    type: 'function',
    function: { name, arguments: typeof a === 'string' ? a : JSON.stringify(a) },
  };
}

function json(s: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(s);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

export function parseToolCalls(text: string, format: ToolFormat): ParsedReply {
  if (format === 'qwen') {
    const calls: ApiToolCall[] = [];
    const rest = text.replace(/<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g, (whole, body: string) => {
      const o = json(body);
      const c = o && call(o.name, o.arguments);
      if (!c) return whole;
      calls.push(c);
      return '';
    });
    if (!calls.length) return { content: text, toolCalls: [] };
    const content = rest.trim();
    return { content: content || null, toolCalls: calls };
  }
  if (format === 'llama3') {
    const o = json(text.replace(/^\s*<\|python_tag\|>/, '').trim());
    const c = o && call(o.name, o.parameters ?? o.arguments);
    if (c) return { content: null, toolCalls: [c] };
  }
  return { content: text, toolCalls: [] };
}
