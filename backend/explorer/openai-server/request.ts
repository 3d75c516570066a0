// The body of POST /v1/chat/completions, checked field by field: every field is either used or
// refused with the parameter named (OpenAI itself refuses arguments it does not know), so a client
// never gets an answer that silently ignored what it asked for.
import { badRequest } from './errors.js';

export interface ApiToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ApiMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: ApiToolCall[];
  tool_call_id?: string;
  name?: string;
}

export interface ApiTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

export interface ChatRequest {
  model?: string;
  messages: ApiMessage[];
  temperature: number;
  topP: number;
  /** Requested completion tokens (undefined: the server's limit). */
  maxTokens?: number;
  n: number;
  stop: string[];
  seed?: number;
  stream: boolean;
  includeUsage: boolean;
  logprobs: boolean;
  topLogprobs: number;
  tools?: ApiTool[];
  /** 'none' renders no tools and parses no calls. */
  toolChoice: 'auto' | 'none';
  metadata: Record<string, string>;
}

/** Arguments clients send that change nothing here when left at their defaults. */
const NEUTRAL: Partial<Record<string, (v: unknown) => boolean>> = {
  frequency_penalty: (v) => v === 0 || v === null,
  presence_penalty: (v) => v === 0 || v === null,
  logit_bias: (v) => v === null || (typeof v === 'object' && Object.keys(v as object).length === 0),
  response_format: (v) => v === null || (isObj(v) && v.type === 'text'),
  parallel_tool_calls: (v) => v === true || v === null,
  user: (v) => typeof v === 'string',
  store: (v) => v === false || v === null,
};

const KNOWN = new Set([
  'model',
  'messages',
  'temperature',
  'top_p',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'stop',
  'seed',
  'stream',
  'stream_options',
  'logprobs',
  'top_logprobs',
  'tools',
  'tool_choice',
  'metadata',
]);

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function num(body: Record<string, unknown>, key: string, lo: number, hi: number, def: number): number {
  const v = body[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi)
    throw badRequest(`${key} must be a number between ${lo} and ${hi}; got ${JSON.stringify(v)}`, key);
  return v;
}

function int(body: Record<string, unknown>, key: string, lo: number, hi: number): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi)
    throw badRequest(`${key} must be an integer between ${lo} and ${hi}; got ${JSON.stringify(v)}`, key);
  return v;
}

/** Text of a message's content: a string, or a list of text parts (what the client libraries send). */
function contentText(v: unknown, param: string, nullable: boolean): string {
  if (typeof v === 'string') return v;
  if ((v === null || v === undefined) && nullable) return '';
  if (Array.isArray(v)) {
    return v
      .map((p, i) => {
        if (!isObj(p) || p.type !== 'text' || typeof p.text !== 'string')
          throw badRequest(`only text content parts are served ({"type": "text", "text": ...})`, `${param}[${i}]`);
        return p.text;
      })
      .join('');
  }
  throw badRequest('content must be a string or a list of text parts', param);
}

function message(m: unknown, i: number): ApiMessage {
  const at = `messages[${i}]`;
  if (!isObj(m)) throw badRequest('each message must be an object with a role and content', at);
  const role = m.role === 'developer' ? 'system' : m.role;
  if (role !== 'system' && role !== 'user' && role !== 'assistant' && role !== 'tool')
    throw badRequest(
      `unknown role ${JSON.stringify(m.role)}: expected one of system, developer, user, assistant, tool`,
      `${at}.role`,
      'invalid_value',
    );
  const out: ApiMessage = { role, content: contentText(m.content, `${at}.content`, role === 'assistant') };
  if (typeof m.name === 'string') out.name = m.name;
  if (role === 'assistant' && m.tool_calls !== undefined && m.tool_calls !== null) {
    if (!Array.isArray(m.tool_calls)) throw badRequest('tool_calls must be a list', `${at}.tool_calls`);
    out.tool_calls = m.tool_calls.map((c, j) => {
      const f = isObj(c) && isObj(c.function) ? c.function : undefined;
      if (!f || typeof f.name !== 'string' || typeof f.arguments !== 'string')
        throw badRequest(
          'a tool call needs function.name and function.arguments (a JSON string)',
          `${at}.tool_calls[${j}]`,
        );
      return {
        id: typeof c.id === 'string' ? c.id : `call_${i}_${j}`,
        type: 'function' as const,
        function: { name: f.name, arguments: f.arguments },
      };
    });
  } else if (role === 'assistant' && m.content === null) {
    throw badRequest('an assistant message needs content or tool_calls', `${at}.content`);
  }
  if (role === 'tool') {
    if (typeof m.tool_call_id !== 'string')
      throw badRequest('a tool message needs the tool_call_id it answers', `${at}.tool_call_id`);
    out.tool_call_id = m.tool_call_id;
  }
  return out;
}

function tools(v: unknown): ApiTool[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw badRequest('tools must be a list of {"type": "function", "function": {...}}', 'tools');
  return v.map((t, i) => {
    if (!isObj(t) || t.type !== 'function' || !isObj(t.function) || typeof t.function.name !== 'string')
      throw badRequest('a tool must be {"type": "function", "function": {"name": ..., ...}}', `tools[${i}]`);
    const f = t.function;
    if (f.parameters !== undefined && !isObj(f.parameters))
      throw badRequest('function.parameters must be a JSON Schema object', `tools[${i}].function.parameters`);
    return {
      type: 'function',
      function: {
        name: f.name as string,
        ...(typeof f.description === 'string' ? { description: f.description } : {}),
        ...(f.parameters ? { parameters: f.parameters as Record<string, unknown> } : {}),
      },
    };
  });
}

/** The checked request, or a 400 ApiError naming the parameter. */
export function parseChatRequest(body: unknown): ChatRequest {
  if (!isObj(body)) throw badRequest('the request body must be a JSON object');
  for (const k of Object.keys(body)) {
    if (KNOWN.has(k)) continue;
    const neutral = NEUTRAL[k];
    if (neutral?.(body[k])) continue;
    throw badRequest(
      neutral
        ? `${k} is not supported by this server (only its default value is accepted)`
        : `Unrecognized request argument supplied: ${k}`,
      k,
    );
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw badRequest('messages must be a non-empty list', 'messages');
  const messages = body.messages.map(message);
  if (body.max_tokens != null && body.max_completion_tokens != null)
    throw badRequest('give max_tokens or max_completion_tokens, not both', 'max_completion_tokens');
  const maxTokens = int(body, 'max_completion_tokens', 1, 1 << 30) ?? int(body, 'max_tokens', 1, 1 << 30);
  let stop: string[] = [];
  if (typeof body.stop === 'string') stop = [body.stop];
  else if (Array.isArray(body.stop)) {
    if (body.stop.length > 4 || body.stop.some((s) => typeof s !== 'string' || s === ''))
      throw badRequest('stop must be a string or a list of up to 4 non-empty strings', 'stop');
    stop = body.stop as string[];
  } else if (body.stop !== undefined && body.stop !== null)
    throw badRequest('stop must be a string or a list of strings', 'stop');
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    throw badRequest('stream must be a boolean', 'stream');
  const so = body.stream_options;
  if (so !== undefined && so !== null && !isObj(so))
    throw badRequest('stream_options must be an object', 'stream_options');
  if (body.logprobs !== undefined && body.logprobs !== null && typeof body.logprobs !== 'boolean')
    throw badRequest('logprobs must be a boolean', 'logprobs');
  const logprobs = body.logprobs === true;
  const topLogprobs = int(body, 'top_logprobs', 0, 20) ?? 0;
  if (topLogprobs > 0 && !logprobs) throw badRequest('top_logprobs needs logprobs: true', 'top_logprobs');
  let toolChoice: 'auto' | 'none' = 'auto';
  const tc = body.tool_choice;
  if (tc === 'none') toolChoice = 'none';
  else if (tc !== undefined && tc !== null && tc !== 'auto')
    throw badRequest(
      'tool_choice: only "auto" and "none" are served (forcing a call needs constrained decoding, which this server does not do)',
      'tool_choice',
    );
  const metadata: Record<string, string> = {};
  if (body.metadata !== undefined && body.metadata !== null) {
    if (!isObj(body.metadata)) throw badRequest('metadata must be an object of strings', 'metadata');
    for (const [k, v] of Object.entries(body.metadata)) {
      if (typeof v !== 'string') throw badRequest('metadata values must be strings', `metadata.${k}`);
      metadata[k] = v;
    }
  }
  if (body.model !== undefined && typeof body.model !== 'string') throw badRequest('model must be a string', 'model');
  return {
    model: body.model as string | undefined,
    messages,
    temperature: num(body, 'temperature', 0, 2, 1),
    topP: num(body, 'top_p', 0, 1, 1),
    maxTokens,
    n: int(body, 'n', 1, 128) ?? 1,
    stop,
    seed: int(body, 'seed', -(2 ** 53), 2 ** 53),
    stream: body.stream === true,
    includeUsage: isObj(so) && so.include_usage === true,
    logprobs,
    topLogprobs,
    tools: tools(body.tools),
    toolChoice,
    metadata,
  };
}
