// The tokenizer of an imported Hugging Face model: its own tokenizer.json + tokenizer_config.json run
// by @huggingface/tokenizers (so ids are exactly the library's), its chat template (chat-template.ts:
// tokenizer_config.json, chat_template.jinja or a named one) rendered by @huggingface/jinja within
// limits (bounded-template.ts), eos / pad from generation_config.json and tokenizer_config.json.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer as HfLibTokenizer } from '@huggingface/tokenizers';
import { InputError } from '../../core/errors.js';
import { BASE_OUTPUT_CHARS, BoundedTemplate, TemplateLimitError } from './bounded-template.js';
import {
  CHAT_TEMPLATE_FILE,
  chooseTemplate,
  folderTemplates,
  missingReason,
  type ChatTemplateSource,
} from './chat-template.js';
import type { ChatMessage } from '../../core/types.js';
import type { SpecialTokenName, Tokenizer } from '../tokenizer/types.js';
import { readRegularFile } from '../../core/regular-file.js';
import { checkTokenizerRegexes } from './regex-check.js';

type Json = Record<string, unknown>;

/** A chat template that raised while rendering (its own raise_exception, an undefined filter): named by file and field. */
export class TemplateRenderError extends InputError {}

function readJson(file: string): Json {
  try {
    const v = JSON.parse(readRegularFile(file, 'utf8')) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('expected a JSON object');
    return v as Json;
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`not valid JSON (${(e as Error).message})`, { file });
  }
}

/** A token given as a string or as {content: ...} (tokenizer_config.json allows both). */
function tokenText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as Json).content === 'string') return (v as Json).content as string;
  return undefined;
}

/** Source files kept verbatim and written back on save; `templates`: chat_template.jinja and the like, by path relative to the folder. */
export interface HfTokenizerFiles {
  tokenizer: Json;
  tokenizerConfig: Json;
  generationConfig?: Json;
  templates?: Record<string, string>;
}

export interface HfTokenizerOptions {
  /** The chat template to use: a name (`default` when unset) or a .jinja file (`model.chat_template`). */
  chatTemplate?: string;
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
  /** Where the template in use came from (errors name it). */
  readonly templateSource?: { file: string; field: string; name: string };
  private readonly lib: HfLibTokenizer;
  private readonly template?: BoundedTemplate;
  private readonly noTemplate: string;
  private readonly where: string;
  private readonly bosText?: string;
  private readonly eosText?: string;

  /**
   * `files`: the source files, written back on save. `template`: the chat template chosen from
   * them (chat-template.ts); `noTemplate`: why there is none, for the error a chat render gives.
   */
  constructor(
    readonly files: HfTokenizerFiles,
    where = '(tokenizer)',
    template?: ChatTemplateSource,
    noTemplate = `this model has no chat_template in ${join(where, 'tokenizer_config.json')}`,
  ) {
    const cfgFile = join(where, 'tokenizer_config.json');
    // Before the library compiles them: a backtracking pattern would hang every encode (regex-check.ts).
    checkTokenizerRegexes(files.tokenizer, join(where, 'tokenizer.json'));
    try {
      this.lib = new HfLibTokenizer(files.tokenizer, files.tokenizerConfig);
    } catch (e) {
      throw new InputError(`@huggingface/tokenizers cannot read it: ${(e as Error).message}`, {
        file: join(where, 'tokenizer.json'),
      });
    }
    const model = (files.tokenizer.model ?? {}) as Json;
    let maxId = -1;
    for (const id of Object.values((model.vocab ?? {}) as Record<string, number>))
      if (typeof id === 'number' && id > maxId) maxId = id;
    for (const a of (files.tokenizer.added_tokens ?? []) as { id: number }[]) if (a.id > maxId) maxId = a.id;
    this.vocabSize = maxId + 1;
    const idOf = (text: string | undefined, field: string): number | undefined => {
      if (text === undefined) return undefined;
      const id = this.lib.token_to_id(text);
      if (id === undefined)
        throw new InputError(`token ${JSON.stringify(text)} is not in tokenizer.json`, { file: cfgFile, field });
      return id;
    };
    const tc = files.tokenizerConfig;
    const gc = files.generationConfig ?? {};
    this.bosText = tokenText(tc.bos_token);
    this.eosText = tokenText(tc.eos_token);
    const genEos = Array.isArray(gc.eos_token_id)
      ? (gc.eos_token_id as number[])
      : typeof gc.eos_token_id === 'number'
        ? [gc.eos_token_id]
        : [];
    const eos = idOf(this.eosText, 'eos_token') ?? genEos[0];
    if (eos === undefined)
      throw new InputError('no eos token (neither eos_token here nor eos_token_id in generation_config.json)', {
        file: cfgFile,
        field: 'eos_token',
      });
    this.eosId = eos;
    this.bosId = idOf(this.bosText, 'bos_token') ?? (typeof gc.bos_token_id === 'number' ? gc.bos_token_id : eos);
    this.padId =
      idOf(tokenText(tc.pad_token), 'pad_token') ?? (typeof gc.pad_token_id === 'number' ? gc.pad_token_id : eos);
    this.noTemplate = noTemplate;
    this.where = where;
    if (template) {
      const at = { file: template.file, field: template.field };
      this.chatTemplate = template.text;
      this.templateSource = { ...at, name: template.name };
      try {
        this.template = new BoundedTemplate(template.text);
      } catch (e) {
        throw new InputError(
          e instanceof TemplateLimitError ? e.message : `@huggingface/jinja cannot parse it: ${(e as Error).message}`,
          at,
        );
      }
    }
    this.endOfTurnId = this.findEndOfTurn() ?? eos;
    this.stopIds = [...new Set([this.endOfTurnId, eos, ...genEos])];
  }

  /**
   * The tokenizer of folder DIR (its tokenizer.json, or FILE when given, with the folder's
   * tokenizer_config.json, generation_config.json and chat templates).
   */
  static fromDir(dir: string, opts: HfTokenizerOptions = {}, file = join(dir, 'tokenizer.json')): HfTokenizer {
    const cf = join(dir, 'tokenizer_config.json');
    const gf = join(dir, 'generation_config.json');
    if (!existsSync(file)) throw new InputError('no tokenizer.json (an imported model needs its tokenizer)', { file });
    const tokenizerConfig = existsSync(cf) ? readJson(cf) : {};
    const all = folderTemplates(dir, tokenizerConfig);
    const template = chooseTemplate(all, opts.chatTemplate, { file: cf, field: 'chat_template' });
    // Template files travel with the tokenizer (runs, checkpoints, exports); a chosen template is
    // saved as chat_template.jinja, the file transformers reads first, so every reader uses it.
    const templates: Record<string, string> = {};
    for (const t of all.values()) if (t.file.endsWith('.jinja')) templates[t.file.slice(dir.length + 1)] = t.text;
    if (template && (opts.chatTemplate !== undefined || template.file.endsWith('.jinja')))
      templates[CHAT_TEMPLATE_FILE] = template.text;
    const files: HfTokenizerFiles = {
      tokenizer: readJson(file),
      tokenizerConfig,
      generationConfig: existsSync(gf) ? readJson(gf) : undefined,
      templates,
    };
    return new HfTokenizer(files, dir, template, missingReason(dir, all));
  }

  specialId(name: SpecialTokenName): number {
    if (name === 'pad') return this.padId;
    if (name === 'bos') return this.bosId;
    if (name === 'eos') return this.eosId;
    if (name === 'end') return this.endOfTurnId;
    throw new Error(
      `an imported model's tokenizer has no '${name}' role token: its chat template lays out conversations (multi-turn workflows with environment turns need this project's own chat layout)`,
    );
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
    return this.lib.decode(ids, {
      skip_special_tokens: opts?.skipSpecial ?? false,
      clean_up_tokenization_spaces: false,
    });
  }

  toJSON(): unknown {
    return this.files.tokenizer;
  }

  /** What rebuilds this tokenizer in a worker thread (tokenizer/transfer.ts). */
  transfer(): {
    kind: 'hf';
    files: HfTokenizerFiles;
    where: string;
    template?: ChatTemplateSource;
    noTemplate: string;
  } {
    const template =
      this.templateSource && this.chatTemplate !== undefined
        ? { ...this.templateSource, text: this.chatTemplate }
        : undefined;
    return { kind: 'hf', files: this.files, where: this.where, template, noTemplate: this.noTemplate };
  }

  /** The chat template applied to messages; `addGenerationPrompt` ends with the assistant header. */
  renderChat(messages: ChatMessage[], addGenerationPrompt: boolean): string {
    if (!this.template) throw new Error(this.noTemplate);
    let chars = 0;
    for (const m of messages) chars += m.content.length;
    try {
      return this.template.render(
        {
          // Environment turns (tool results) go in as user turns: every template knows that role.
          messages: messages.map((m) => ({ role: m.role === 'environment' ? 'user' : m.role, content: m.content })),
          add_generation_prompt: addGenerationPrompt,
          bos_token: this.bosText ?? '',
          eos_token: this.eosText ?? '',
        },
        { maxOutputChars: BASE_OUTPUT_CHARS + 8 * chars },
      );
    } catch (e) {
      const at = { file: this.templateSource!.file, field: this.templateSource!.field };
      if (e instanceof TemplateLimitError) throw new InputError(e.message, at);
      // raise_exception(), an undefined filter or method: the template's own error, with where it is.
      throw new TemplateRenderError(`chat template '${this.templateSource!.name}' failed: ${(e as Error).message}`, at);
    }
  }

  /** The special token right after an assistant message's content in the template, if any. */
  private findEndOfTurn(): number | undefined {
    if (!this.template) return undefined;
    const mark = 'RFT_END_OF_TURN_PROBE';
    let text: string;
    try {
      text = this.renderChat(
        [
          { role: 'user', content: 'q' },
          { role: 'assistant', content: mark },
        ],
        false,
      );
    } catch (e) {
      // A template over its limits is refused at load (not at the first prompt of a run); one that
      // raises for this probe (e.g. it wants a system turn) may still render real conversations.
      if (e instanceof InputError && !(e instanceof TemplateRenderError)) throw e;
      return undefined;
    }
    const after = text.slice(text.indexOf(mark) + mark.length);
    for (const a of (this.files.tokenizer.added_tokens ?? []) as { id: number; content: string; special?: boolean }[]) {
      if (a.special && after.startsWith(a.content)) return a.id;
    }
    return undefined;
  }
}
