// The chat layout every prompt and response uses, so explorer, trainer and expert data agree:
//   <|bos|><|system|>S<|end|><|user|>U<|end|><|assistant|>RESPONSE<|end|>
// Environment turns in multi-turn workflows are <|environment|>TEXT<|end|> followed by <|assistant|>.
// An imported Hugging Face model (tokenizer kind 'hf') uses its own chat template instead.
import type { ChatMessage } from '../core/types.js';
import type { Tokenizer } from './tokenizer/types.js';
import type { HfTokenizer } from './hf/tokenizer.js';

function hf(tok: Tokenizer): HfTokenizer | undefined {
  return tok.kind === 'hf' ? (tok as HfTokenizer) : undefined;
}

const ROLE_TOKEN = { system: 'system', user: 'user', assistant: 'assistant', environment: 'environment' } as const;

/** Tokens of one message: role marker, content, end marker. */
export function encodeMessage(tok: Tokenizer, m: ChatMessage): number[] {
  return [tok.specialId(ROLE_TOKEN[m.role]), ...tok.encode(m.content), tok.specialId('end')];
}

/** Prompt tokens for a conversation, ending with the assistant marker the model continues from. */
export function encodePrompt(tok: Tokenizer, messages: ChatMessage[]): number[] {
  const h = hf(tok);
  if (h) return h.encode(h.renderChat(messages, true));
  const ids = [tok.bosId];
  // One push per token: spreading a long message into push() overflows the call stack (a 1 MB prompt).
  for (const m of messages) for (const id of encodeMessage(tok, m)) ids.push(id);
  ids.push(tok.specialId('assistant'));
  return ids;
}

/** Tokens of a written (expert) response, closed with the end marker the model learns to emit. */
export function encodeResponse(tok: Tokenizer, text: string): number[] {
  return [...tok.encode(text), tok.specialId('end')];
}

/** Token ids that end an assistant turn. */
export function stopTokens(tok: Tokenizer): number[] {
  const h = hf(tok);
  if (h) return h.stopIds;
  return [tok.specialId('end'), tok.eosId];
}

/** The messages of a single-prompt task. */
export function taskMessages(prompt: string, system?: string): ChatMessage[] {
  return system
    ? [
        { role: 'system', content: system },
        { role: 'user', content: prompt },
      ]
    : [{ role: 'user', content: prompt }];
}
