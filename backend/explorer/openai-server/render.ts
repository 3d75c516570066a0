// OpenAI messages to prompt tokens, through the model's own chat template: an imported model's
// Jinja template gets the messages as OpenAI sends them (tool calls, tool results) and the tools,
// the way transformers' apply_chat_template does; this project's own layout (chat.ts) has no tool
// turns, so tools there are refused, and a tool result becomes an environment turn.
import type { ChatMessage } from '../../core/types.js';
import { encodePrompt } from '../../model/chat.js';
import { BASE_OUTPUT_CHARS, BoundedTemplate, TemplateLimitError } from '../../model/hf/bounded-template.js';
import type { HfTokenizer } from '../../model/hf/tokenizer.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import { badRequest } from './errors.js';
import type { ApiMessage, ApiTool } from './request.js';
import type { ToolFormat } from './tool-parse.js';

const templates = new WeakMap<HfTokenizer, BoundedTemplate>();

function template(tok: HfTokenizer): BoundedTemplate | undefined {
  if (tok.chatTemplate === undefined) return undefined;
  let t = templates.get(tok);
  if (!t) templates.set(tok, (t = new BoundedTemplate(tok.chatTemplate)));
  return t;
}

/** How the tokenizer's chat template writes tool calls, or 'none' where it takes no tools. */
export function toolFormat(tok: Tokenizer): ToolFormat {
  if (tok.kind !== 'hf') return 'none';
  const text = (tok as HfTokenizer).chatTemplate ?? '';
  if (!/\btools\b/.test(text)) return 'none';
  if (text.includes('<tool_call>')) return 'qwen';
  if (text.includes('<|eot_id|>') || text.includes('ipython')) return 'llama3';
  return 'none';
}

function tokenText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string')
    return (v as { content: string }).content;
  return '';
}

/** The prompt tokens of MESSAGES (with TOOLS offered), ending where the assistant's reply begins. */
export function renderPrompt(tok: Tokenizer, messages: ApiMessage[], tools: ApiTool[] | undefined): number[] {
  const withTools = tools !== undefined && tools.length > 0;
  if (withTools && toolFormat(tok) === 'none')
    throw badRequest(
      "this model's chat template does not support tools (it has no tool layout); call it without tools",
      'tools',
      'tools_not_supported',
    );
  if (tok.kind !== 'hf') return encodePrompt(tok, ownLayout(messages));
  const h = tok as HfTokenizer;
  const t = template(h);
  if (!t) throw badRequest('this model has no chat template: it cannot serve chat messages', 'messages');
  let chars = 0;
  for (const m of messages) chars += m.content.length;
  const msgs = messages.map((m) => ({
    role: m.role,
    content: m.content,
    ...(m.tool_calls
      ? {
          // Templates read tool_call.function.name / .arguments (Qwen also the bare form): arguments as
          // an object, the way transformers passes them after json.loads.
          tool_calls: m.tool_calls.map((c) => ({
            id: c.id,
            type: 'function',
            function: { name: c.function.name, arguments: parseArgs(c.function.arguments) },
          })),
        }
      : {}),
    ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
    ...(m.name ? { name: m.name } : {}),
  }));
  let text: string;
  try {
    text = t.render(
      {
        messages: msgs,
        ...(withTools ? { tools } : {}),
        add_generation_prompt: true,
        bos_token: tokenText(h.files.tokenizerConfig.bos_token),
        eos_token: tokenText(h.files.tokenizerConfig.eos_token),
      },
      { maxOutputChars: BASE_OUTPUT_CHARS + 8 * chars },
    );
  } catch (e) {
    const why = e instanceof TemplateLimitError ? e.message : (e as Error).message;
    throw badRequest(`the model's chat template cannot lay out these messages: ${why}`, 'messages');
  }
  return h.encode(text);
}

function parseArgs(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

/** Messages in this project's own layout: a tool result is an environment turn; tool calls have no place. */
function ownLayout(messages: ApiMessage[]): ChatMessage[] {
  return messages.map((m, i) => {
    if (m.tool_calls?.length)
      throw badRequest(
        "this model's chat layout has no tool calls",
        `messages[${i}].tool_calls`,
        'tools_not_supported',
      );
    return { role: m.role === 'tool' ? 'environment' : m.role, content: m.content };
  });
}
