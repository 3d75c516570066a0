// A small tool-using model "pretrained elsewhere", made here (issue 43 item 8): a byte-level
// Hugging Face tokenizer (no merges: one token a byte, plus the chat markers) with a compact
// Qwen-style chat template (tools listed, calls in <tool_call> blocks, results in <tool_response>),
// and a Llama-layout transformer trained by SFT on whole calculator conversations, written as a
// Hugging Face folder the way an imported model arrives.
//
// Task: "What is A+B?" / "What is A*B?" (A, B in 1..9). A demonstration calls the calculator with
// "A+B", reads the tool's output and answers it; with a bias RL can remove it instead answers at once
// with A (a guess, wrong unless by chance): 0.62 of the time on sums, 0.2 on products. Greedily the
// model so skips the tool on sums (wrong) and uses it on products (right); sampling still calls the
// tool on a sum about a third of the time, which an agent's reward favours. Held-out questions share the rule.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../../backend/core/rng.js';
import type { Experience } from '../../backend/core/types.js';
import { makeConfig } from '../../backend/model/config.js';
import { exportHf } from '../../backend/model/export/hf.js';
import { loadTokenizer } from '../../backend/model/tokenizer/index.js';
import type { Tokenizer } from '../../backend/model/tokenizer/types.js';
import { Transformer } from '../../backend/model/transformer.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import { renderPrompt } from '../../backend/explorer/openai-server/render.js';
import type { ApiMessage, ApiTool } from '../../backend/explorer/openai-server/request.js';

export interface ToolTask {
  id: string;
  question: string;
  expression: string;
  answer: string;
}

const SPECIAL = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
const MARKERS = ['<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>'];

export const TOOL_TEMPLATE = [
  '{%- if tools %}<|im_start|>system\ntools:{% for t in tools %} {{ t.function.name }}{% endfor %}<|im_end|>\n{% endif %}',
  '{%- for m in messages %}',
  "{%- if m.role == 'assistant' %}<|im_start|>assistant\n{% if m.content %}{{ m.content }}{% endif %}",
  '{%- if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}</tool_call>{% endfor %}{% endif %}<|im_end|>{{ \'\\n\' }}',
  "{%- elif m.role == 'tool' %}<|im_start|>user\n<tool_response>{{ m.content }}</tool_response><|im_end|>{{ '\\n' }}",
  '{%- else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}',
  '{%- endfor %}',
  '{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}',
].join('');

/** GPT-2's byte -> printable character map (byte-level BPE vocabularies are written in it). */
function byteChars(): string[] {
  const keep = (b: number) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const out: string[] = [];
  let n = 0;
  for (let b = 0; b < 256; b++) out.push(String.fromCodePoint(keep(b) ? b : 256 + n++));
  return out;
}

/** tokenizer.json + tokenizer_config.json of the byte-level tokenizer, written to DIR. */
export function writeToolTokenizer(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const vocab: Record<string, number> = {};
  byteChars().forEach((c, i) => (vocab[c] = i));
  const added = [...SPECIAL, ...MARKERS].map((content, k) => ({
    id: 256 + k,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: SPECIAL.includes(content),
  }));
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  writeFileSync(
    join(dir, 'tokenizer.json'),
    JSON.stringify({
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: added,
      normalizer: null,
      pre_tokenizer: byteLevel,
      post_processor: null,
      decoder: byteLevel,
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: '',
        end_of_word_suffix: '',
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab,
        merges: [],
      },
    }),
  );
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({
      tokenizer_class: 'PreTrainedTokenizerFast',
      bos_token: null,
      eos_token: '<|im_end|>',
      pad_token: '<|endoftext|>',
      clean_up_tokenization_spaces: false,
      chat_template: TOOL_TEMPLATE,
    }),
  );
}

/** All 162 questions, every fourth held out (40 eval, 122 train). */
export function toolTasks(): { train: ToolTask[]; eval: ToolTask[] } {
  const train: ToolTask[] = [];
  const evalSet: ToolTask[] = [];
  let i = 0;
  for (const op of ['+', '*'])
    for (let a = 1; a <= 9; a++)
      for (let b = 1; b <= 9; b++) {
        const expression = `${a}${op}${b}`;
        const t = {
          id: `q-${a}${op === '+' ? 'p' : 'm'}${b}`,
          question: `What is ${expression}?`,
          expression,
          answer: String(op === '+' ? a + b : a * b),
        };
        (i++ % 4 === 3 ? evalSet : train).push(t);
      }
  return { train, eval: evalSet };
}

export const TOOLS: ApiTool[] = [
  {
    type: 'function',
    function: {
      name: 'calculator',
      description: 'Evaluates an arithmetic expression.',
      parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
    },
  },
];

const biasOf = (t: ToolTask) => (t.expression.includes('+') ? 0.62 : 0.2);

/** One demonstration: the whole conversation, the assistant's replies trained, the tool's turn masked. */
function demo(tok: Tokenizer, t: ToolTask, direct: boolean, id: string): Experience {
  const user: ApiMessage = { role: 'user', content: t.question };
  const prompt = renderPrompt(tok, [user], TOOLS);
  const text = (ids: number[]) => tok.decode(ids);
  const tokens: number[] = [];
  const mask: number[] = [];
  const add = (s: string, m: number) => {
    const ids = tok.encode(s, { allowSpecial: true });
    tokens.push(...ids);
    mask.push(...ids.map(() => m));
  };
  if (direct) add(`${t.expression[0]}<|im_end|>`, 1);
  else {
    const call = {
      id: 'c',
      type: 'function' as const,
      function: { name: 'calculator', arguments: JSON.stringify({ expression: t.expression }) },
    };
    const a1: ApiMessage = { role: 'assistant', content: '', tool_calls: [call] };
    const tool: ApiMessage = { role: 'tool', content: t.answer, tool_call_id: 'c' };
    const p0 = text(prompt);
    const p2 = text(renderPrompt(tok, [user, a1, tool], TOOLS));
    // Reply 1 ends at <|im_end|>; the rest up to the next reply (newline, tool turn, header) is masked.
    const between = p2.slice(p0.length);
    const end = between.indexOf('<|im_end|>') + '<|im_end|>'.length;
    add(between.slice(0, end), 1);
    add(between.slice(end), 0);
    add(`${t.answer}<|im_end|>`, 1);
  }
  return {
    id,
    taskId: t.id,
    groupId: id,
    runId: 'pretrain',
    source: 'expert',
    promptTokens: prompt,
    promptText: t.question,
    responseTokens: tokens,
    responseText: '',
    actionMask: mask,
    logprobs: [],
    modelVersion: -1,
    reward: 1,
    status: 'ok',
    useCount: 0,
    createdAt: 0,
  };
}

/** Pretrains (SFT, `steps` batches of 32 biased demonstrations) and writes the model to DIR. */
export async function makeToolModel(
  dir: string,
  opts: { steps?: number; seed?: number; lr?: number; onStep?: (step: number, loss: number) => void } = {},
): Promise<string> {
  const tokDir = `${dir}.tokenizer`;
  writeToolTokenizer(tokDir);
  const tok = loadTokenizer(tokDir);
  const tasks = toolTasks();
  const cfg = makeConfig({
    vocabSize: tok.vocabSize,
    dModel: 64,
    nLayers: 2,
    nHeads: 4,
    nKvHeads: 2,
    dFF: 128,
    maxSeqLen: 256,
  });
  const model = new Transformer(cfg, opts.seed ?? 5);
  const rng = new Rng(opts.seed ?? 5);
  const sft = new Trainer(model, makeObjective('sft'), { lr: opts.lr ?? 3e-3, padId: tok.padId, microBatchSize: 0 });
  for (let s = 0; s < (opts.steps ?? 300); s++) {
    const batch = Array.from({ length: 32 }, (_, i) => {
      const t = tasks.train[rng.int(0, tasks.train.length)]!;
      return demo(tok, t, rng.next() < biasOf(t), `p${s}-${i}`);
    });
    const r = await sft.trainStep(batch);
    opts.onStep?.(s, r.loss);
  }
  sft.dispose();
  await exportHf(model, tok, dir);
  model.dispose();
  return dir;
}
