// An agent written against the `openai` npm client, as one is written for any OpenAI-compatible
// endpoint: it offers a calculator tool, runs the tool the model asks for, gives it the tool's
// output, and returns the model's final answer. Pointed at a `mode: serve` run (docs/serve.md) it
// names its episode and task in `metadata`, so the run records the whole exchange as one episode;
// `postReward` then tells the run how the episode went (POST /v1/rft/rewards).
//
//   node --import tsx examples/agent/agent.ts --base-url URL --token-file FILE "What is 6*7?"
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

export const CALCULATOR: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'calculator',
    description: 'Evaluates an arithmetic expression (numbers, + - * /, parentheses).',
    parameters: {
      type: 'object',
      properties: { expression: { type: 'string', description: 'e.g. "6*7"' } },
      required: ['expression'],
    },
  },
};

/** The calculator tool: + - * / and parentheses over decimal numbers; anything else is an error string. */
export function calculator(expression: string): string {
  const src = expression.replace(/\s+/g, '');
  let i = 0;
  const num = (): number => {
    if (src[i] === '(') {
      i++;
      const v = sum();
      if (src[i++] !== ')') throw new Error('missing )');
      return v;
    }
    if (src[i] === '-') {
      i++;
      return -num();
    }
    const m = /^\d+(\.\d+)?/.exec(src.slice(i));
    if (!m) throw new Error(`a number expected at ${i + 1}`);
    i += m[0].length;
    return Number(m[0]);
  };
  const product = (): number => {
    let v = num();
    while (src[i] === '*' || src[i] === '/') v = src[i++] === '*' ? v * num() : v / num();
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (src[i] === '+' || src[i] === '-') v = src[i++] === '+' ? v + product() : v - product();
    return v;
  };
  try {
    const v = sum();
    if (i !== src.length) throw new Error(`unexpected '${src[i]}' at ${i + 1}`);
    return Number.isFinite(v) ? String(Number(v.toFixed(10))) : 'error: not a finite number';
  } catch (e) {
    return `error: ${(e as Error).message}`;
  }
}

export interface AgentOptions {
  model: string;
  /** Names the episode for the serve run (its rewards are posted under it). */
  episodeId?: string;
  /** Groups episodes of the same question (GRPO compares them). */
  taskId?: string;
  temperature?: number;
  /** Model calls at most (each tool round is one). */
  maxTurns?: number;
  maxTokens?: number;
}

export interface AgentResult {
  answer: string;
  messages: OpenAI.ChatCompletionMessageParam[];
  toolCalls: number;
  /** The policy version that gave the final answer (system_fingerprint). */
  version?: string;
}

/** Asks QUESTION; runs the calculator whenever the model calls it; returns the final answer. */
export async function runAgent(client: OpenAI, question: string, o: AgentOptions): Promise<AgentResult> {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: question }];
  const metadata = {
    ...(o.episodeId ? { episode_id: o.episodeId } : {}),
    ...(o.taskId ? { task_id: o.taskId } : {}),
  };
  let toolCalls = 0;
  for (let turn = 0; turn < (o.maxTurns ?? 4); turn++) {
    const r = await client.chat.completions.create({
      model: o.model,
      messages,
      tools: [CALCULATOR],
      temperature: o.temperature ?? 1,
      ...(o.maxTokens ? { max_tokens: o.maxTokens } : {}),
      metadata,
    });
    const msg = r.choices[0]!.message;
    const calls = (msg.tool_calls ?? []).filter((c) => c.type === 'function');
    if (!calls.length)
      return { answer: (msg.content ?? '').trim(), messages, toolCalls, version: r.system_fingerprint };
    // The reply as it came (the serve run continues the episode from it), then each tool's output.
    messages.push({ role: 'assistant', content: msg.content, tool_calls: calls });
    for (const c of calls) {
      toolCalls++;
      let expression = '';
      try {
        expression = String((JSON.parse(c.function.arguments) as { expression?: unknown }).expression ?? '');
      } catch {
        expression = '';
      }
      const out = c.function.name === 'calculator' ? calculator(expression) : `error: no tool ${c.function.name}`;
      messages.push({ role: 'tool', tool_call_id: c.id, content: out });
    }
  }
  return { answer: '', messages, toolCalls };
}

/** Tells a serve run how episode ID went; returns the run's word on it (accepted, or refused and why). */
export async function postReward(
  client: OpenAI,
  episodeId: string,
  reward: number,
): Promise<{ status: string; reason?: string }> {
  const r = (await client.post('/rft/rewards', { body: { rewards: [{ episode_id: episodeId, reward }] } })) as {
    results: { status: string; reason?: string }[];
  };
  return r.results[0]!;
}

async function main(argv: string[]): Promise<void> {
  const flag = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv.splice(i, 2)[1] : undefined;
  };
  const baseURL = flag('--base-url') ?? process.env.OPENAI_BASE_URL;
  const tokenFile = flag('--token-file');
  const apiKey = tokenFile ? readFileSync(tokenFile, 'utf8').trim() : process.env.OPENAI_API_KEY;
  const model = flag('--model') ?? (await new OpenAI({ baseURL, apiKey }).models.list()).data[0]!.id;
  const question = argv.join(' ') || 'What is 6*7?';
  const client = new OpenAI({ baseURL, apiKey });
  const episodeId = `agent-${Date.now()}`;
  const r = await runAgent(client, question, { model, episodeId });
  console.log(`${question} -> ${r.answer} (${r.toolCalls} tool call(s), policy ${r.version ?? '?'})`);
  const expected = calculator(question.replace(/^\D*/, '').replace(/\?$/, ''));
  console.log('reward:', await postReward(client, episodeId, r.answer === expected ? 1 : 0));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv.slice(2));
