// The tokenizer of an imported Hugging Face model: its own tokenizer.json + tokenizer_config.json run
// by @huggingface/tokenizers (so ids are exactly the library's), its chat template rendered with
// @huggingface/jinja, eos / pad from generation_config.json and tokenizer_config.json.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer as HfLibTokenizer } from '@huggingface/tokenizers';
import { Template } from '@huggingface/jinja';
import { InputError } from '../../core/errors.js';
import type { ChatMessage } from '../../core/types.js';
import type { SpecialTokenName, Tokenizer } from '../tokenizer/types.js';

type Json = Record<string, unknown>;

function readJson(file: string): Json {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('expected a JSON object');
    return v as Json;
  } catch (e) {
    throw new InputError(`not valid JSON (${(e as Error).message})`, { file });
  }
}

/** A token given as a string or as {content: ...} (tokenizer_config.json allows both). */
function tokenText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as Json).content === 'string') return (v as Json).content as string;
  return undefined;
}

export class HfTokenizer implements Tokenizer {
  readonly kind = 'hf' as const;
  readonly vocabSize: number;
  readonly padId: number;
  readonly bosId: number;
  readonly eosId: number;
  /** Every id that ends generation: eos ids of generation_config.json and the end-of-turn token. */
  readonly stopIds: number[];
  /** The token that closes an assistant turn in the chat template (e.g. <|im_end|>, <|eot_id|>). */
  readonly endOfTurnId: number;
  readonly chatTemplate?: string;
  private readonly lib: HfLibTokenizer;
  private readonly template?: Template;
  private readonly bosText?: string;
  private readonly eosText?: string;

  /** `files`: the source files kept verbatim, written back on save (tokenizer.json, tokenizer_config.json, generation_config.json). */
  constructor(
    readonly files: { tokenizer: Json; tokenizerConfig: Json; generationConfig?: Json },
    where = '(tokenizer)',
  ) {
    const cfgFile = join(where, 'tokenizer_config.json');
    try {
      this.lib = new HfLibTokenizer(files.tokenizer, files.tokenizerConfig);
    } catch (e) {
      throw new InputError(`@huggingface/tokenizers cannot read it: ${(e as Error).message}`, { file: join(where, 'tokenizer.json') });
    }
    const model = (files.tokenizer.model ?? {}) as Json;
    let maxId = -1;
    for (const id of Object.values((model.vocab ?? {}) as Record<string, number>)) if (typeof id === 'number' && id > maxId) maxId = id;
    for (const a of (files.tokenizer.added_tokens ?? []) as { id: number }[]) if (a.id > maxId) maxId = a.id;
    this.vocabSize = maxId + 1;
    const idOf = (text: string | undefined, field: string): number | undefined => {
      if (text === undefined) return undefined;
      const id = this.lib.token_to_id(text);
      if (id === undefined) throw new InputError(`token ${JSON.stringify(text)} is not in tokenizer.json`, { file: cfgFile, field });
      return id;
    };
    const tc = files.tokenizerConfig;
    const gc = files.generationConfig ?? {};
    this.bosText = tokenText(tc.bos_token);
    this.eosText = tokenText(tc.eos_token);
    const genEos = Array.isArray(gc.eos_token_id) ? (gc.eos_token_id as number[]) : typeof gc.eos_token_id === 'number' ? [gc.eos_token_id] : [];
    const eos = idOf(this.eosText, 'eos_token') ?? genEos[0];
    if (eos === undefined) throw new InputError('no eos token (neither eos_token here nor eos_token_id in generation_config.json)', { file: cfgFile, field: 'eos_token' });
    this.eosId = eos;
    this.bosId = idOf(this.bosText, 'bos_token') ?? (typeof gc.bos_token_id === 'number' ? gc.bos_token_id : eos);
    this.padId = idOf(tokenText(tc.pad_token), 'pad_token') ?? (typeof gc.pad_token_id === 'number' ? gc.pad_token_id : eos);
    if (tc.chat_template !== undefined && tc.chat_template !== null) {
      if (typeof tc.chat_template !== 'string') throw new InputError('only a single template string is supported', { file: cfgFile, field: 'chat_template' });
      this.chatTemplate = tc.chat_template;
      try {
        this.template = new Template(tc.chat_template);
      } catch (e) {
        throw new InputError(`@huggingface/jinja cannot parse it: ${(e as Error).message}`, { file: cfgFile, field: 'chat_template' });
      }
    }
    this.endOfTurnId = this.findEndOfTurn() ?? eos;
    this.stopIds = [...new Set([this.endOfTurnId, eos, ...genEos])];
  }

  static fromDir(dir: string): HfTokenizer {
    const tf = join(dir, 'tokenizer.json');
    const cf = join(dir, 'tokenizer_config.json');
    const gf = join(dir, 'generation_config.json');
    if (!existsSync(tf)) throw new InputError('no tokenizer.json (an imported model needs its tokenizer)', { file: tf });
    return new HfTokenizer({ tokenizer: readJson(tf), tokenizerConfig: existsSync(cf) ? readJson(cf) : {}, generationConfig: existsSync(gf) ? readJson(gf) : undefined }, dir);
  }

  specialId(name: SpecialTokenName): number {
    if (name === 'pad') return this.padId;
    if (name === 'bos') return this.bosId;
    if (name === 'eos') return this.eosId;
    if (name === 'end') return this.endOfTurnId;
    throw new Error(`an imported model's tokenizer has no '${name}' role token: its chat template lays out conversations (multi-turn workflows with environment turns need this project's own chat layout)`);
  }

  /**
   * Ids of `text` as @huggingface/tokenizers gives them without added bos/eos (chat prompts bring
   * their own). Its added special tokens in the text are parsed as such, as the library does:
   * `allowSpecial` cannot turn that off.
   */
  encode(text: string, _opts?: { allowSpecial?: boolean }): number[] {
    return this.lib.encode(text, { add_special_tokens: false }).ids;
  }

  /** Ids exactly as the library's default encode(text) gives them (its post-processor's bos included). */
  encodeDefault(text: string): number[] {
    return this.lib.encode(text).ids;
  }

  decode(ids: number[], opts?: { skipSpecial?: boolean }): string {
    return this.lib.decode(ids, { skip_special_tokens: opts?.skipSpecial ?? false, clean_up_tokenization_spaces: false });
  }

  toJSON(): unknown {
    return this.files.tokenizer;
  }

  /** The chat template applied to messages; `addGenerationPrompt` ends with the assistant header. */
  renderChat(messages: ChatMessage[], addGenerationPrompt: boolean): string {
    if (!this.template) throw new Error('this model has no chat_template in tokenizer_config.json');
    return this.template.render({
      // Environment turns (tool results) go in as user turns: every template knows that role.
      messages: messages.map((m) => ({ role: m.role === 'environment' ? 'user' : m.role, content: m.content })),
      add_generation_prompt: addGenerationPrompt,
      bos_token: this.bosText ?? '',
      eos_token: this.eosText ?? '',
    });
  }

  /** The special token right after an assistant message's content in the template, if any. */
  private findEndOfTurn(): number | undefined {
    if (!this.template) return undefined;
    const mark = 'RFT_END_OF_TURN_PROBE';
    let text: string;
    try {
      text = this.renderChat([{ role: 'user', content: 'q' }, { role: 'assistant', content: mark }], false);
    } catch {
      return undefined;
    }
    const after = text.slice(text.indexOf(mark) + mark.length);
    for (const a of (this.files.tokenizer.added_tokens ?? []) as { id: number; content: string; special?: boolean }[]) {
      if (a.special && after.startsWith(a.content)) return a.id;
    }
    return undefined;
  }
}
