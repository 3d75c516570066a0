// Reads a run config file (YAML or JSON): syntax errors name the line, schema errors the field path.
import { existsSync, readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { validateRunConfig, type RunConfig } from '../core/config.js';
import { InputError } from '../core/errors.js';
import { unreadFields } from '../core/config-unread.js';
import { missingConfigFiles } from '../core/config-files.js';
import { checkRunConfig } from './config-check.js';
import { resolveConfigPaths } from './setup.js';

/** `distributed`: the config of a distributed run (`rft coordinator`), which reads fewer fields (config-unread.ts). */
export function loadRunConfig(file: string, opts: { distributed?: boolean } = {}): RunConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InputError(`cannot read config (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { file });
  }
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length) {
    const e = doc.errors[0]!;
    throw new InputError(`YAML syntax: ${e.message.split('\n')[0]}`, { file, line: e.linePos?.[0]?.line });
  }
  const raw: unknown = doc.toJS();
  const parsed = validateRunConfig(raw);
  // Fields the schema accepts but this run would not read are errors too (checked on what the file says).
  // And names against the registries (algorithms of every stage, sampler, storage, operators): all before any work.
  // A taskset / eval / experts file that is not there too, with its path (not an ENOENT at step 0).
  const issues = parsed.config
    ? [...unreadFields(raw, opts), ...checkRunConfig(parsed.config), ...missingConfigFiles(raw, file)]
    : parsed.issues;
  const config = issues.length ? undefined : parsed.config;
  if (!config) {
    const lines = issues.map((i) => `${file}: field '${i.path}': ${i.message}`);
    throw new InputError(`invalid config, ${issues.length} problem(s):\n  ${lines.join('\n  ')}`, { file });
  }
  // Taskset, eval and expert paths and workflow.file are relative to the config file.
  const resolved = resolveConfigPaths(config, file);
  // workflow.file is loaded only in a trusted run, but a missing one is told by --check already.
  const code = resolved.workflow.file;
  if (code && !existsSync(code))
    throw new InputError(
      `invalid config, 1 problem(s):\n  ${file}: field 'workflow.file': no file '${code}' (paths are relative to the config file)`,
      { file, field: 'workflow.file' },
    );
  return resolved;
}
