// Where a Hugging Face tokenizer's chat template lives, as transformers reads it:
//   - tokenizer_config.json `chat_template`: a string, or a list of {name, template} (older multi-template saves);
//   - chat_template.jinja beside it (transformers >= 4.43 saves it there; it wins over tokenizer_config.json);
//   - additional_chat_templates/NAME.jinja (transformers >= 4.52: the named ones besides the default).
// The one used is `default` unless a config names another (`model.chat_template: NAME`) or points
// to a template file of its own (`model.chat_template: path/to/file.jinja`).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { InputError } from '../../core/errors.js';
import { closest } from '../../core/closest.js';
import { MAX_TEMPLATE_CHARS } from './bounded-template.js';
import { readRegularFile } from '../../core/regular-file.js';

export const CHAT_TEMPLATE_FILE = 'chat_template.jinja';
export const ADDITIONAL_TEMPLATES_DIR = 'additional_chat_templates';

/** A template and where it came from (errors name the file and field). */
export interface ChatTemplateSource {
  name: string;
  text: string;
  file: string;
  field: string;
}

/** A template file read with its size checked before the text is held (a 30 MB file is refused unread). */
export function readTemplateFile(file: string, field = 'chat_template'): string {
  const size = statSync(file).size;
  if (size > MAX_TEMPLATE_CHARS * 4)
    throw new InputError(`the template file is ${size} bytes, over the limit of ${MAX_TEMPLATE_CHARS} characters`, {
      file,
      field,
    });
  return readRegularFile(file, 'utf8');
}

/** Every template the folder DIR offers, by name (`default` for the unnamed one). */
export function folderTemplates(
  dir: string,
  tokenizerConfig: Record<string, unknown>,
): Map<string, ChatTemplateSource> {
  const out = new Map<string, ChatTemplateSource>();
  const cfgFile = join(dir, 'tokenizer_config.json');
  const ct = tokenizerConfig.chat_template;
  if (typeof ct === 'string') out.set('default', { name: 'default', text: ct, file: cfgFile, field: 'chat_template' });
  else if (Array.isArray(ct)) {
    ct.forEach((e, i) => {
      const item = e as { name?: unknown; template?: unknown } | null;
      const field = `chat_template[${i}]`;
      if (!item || typeof item !== 'object')
        throw new InputError('expected {"name": ..., "template": ...}', { file: cfgFile, field });
      if (typeof item.name !== 'string' || !item.name)
        throw new InputError('expected a template name (a string)', { file: cfgFile, field: `${field}.name` });
      if (typeof item.template !== 'string')
        throw new InputError('expected the template text (a string)', { file: cfgFile, field: `${field}.template` });
      out.set(item.name, { name: item.name, text: item.template, file: cfgFile, field: `${field}.template` });
    });
  } else if (ct !== undefined && ct !== null) {
    throw new InputError('expected a template string or a list of {name, template}', {
      file: cfgFile,
      field: 'chat_template',
    });
  }
  const extra = join(dir, ADDITIONAL_TEMPLATES_DIR);
  if (existsSync(extra) && statSync(extra).isDirectory()) {
    for (const f of readdirSync(extra)
      .filter((n) => n.endsWith('.jinja'))
      .sort()) {
      const file = join(extra, f);
      out.set(basename(f, '.jinja'), {
        name: basename(f, '.jinja'),
        text: readTemplateFile(file),
        file,
        field: 'chat_template',
      });
    }
  }
  const jinja = join(dir, CHAT_TEMPLATE_FILE);
  if (existsSync(jinja))
    out.set('default', { name: 'default', text: readTemplateFile(jinja), file: jinja, field: 'chat_template' });
  return out;
}

/** True when CHOICE names a template file rather than a template by name. */
export function isTemplatePath(choice: string): boolean {
  return choice.endsWith('.jinja') || choice.includes('/') || choice.includes('\\');
}

/**
 * The template to use: CHOICE (a name among TEMPLATES, or a .jinja file) or `default`. Undefined
 * when there is no choice and no default (the reason is then `missingReason`).
 */
export function chooseTemplate(
  templates: Map<string, ChatTemplateSource>,
  choice: string | undefined,
  where: { file: string; field: string },
): ChatTemplateSource | undefined {
  if (choice === undefined) return templates.get('default');
  if (isTemplatePath(choice)) {
    if (!existsSync(choice)) throw new InputError(`no such template file: ${choice}`, where);
    return { name: basename(choice, '.jinja'), text: readTemplateFile(choice), file: choice, field: 'chat_template' };
  }
  const t = templates.get(choice);
  if (!t) {
    const names = [...templates.keys()];
    const near = closest(choice, names);
    throw new InputError(
      `no chat template named '${choice}'${near ? ` (did you mean '${near}'?)` : ''}; this model has ${names.length ? names.map((n) => `'${n}'`).join(', ') : 'none'}`,
      where,
    );
  }
  return t;
}

/** Why there is no template to render, for the error a chat render gives. */
export function missingReason(dir: string, templates: Map<string, ChatTemplateSource>): string {
  if (templates.size === 0)
    return `this model has no chat template (no chat_template in ${join(dir, 'tokenizer_config.json')}, no ${join(dir, CHAT_TEMPLATE_FILE)})`;
  return `this model has no default chat template, only ${[...templates.keys()].map((n) => `'${n}'`).join(', ')}: name one with model.chat_template`;
}
