// Reads a run config file (YAML or JSON): syntax errors name the line, schema errors the field path;
// and a config a run stored (storedRunConfig), for every process that resumes or joins a run.
import { noFileMessage } from '../core/config-files.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { validateRunConfig, type RunConfig } from '../core/config.js';
import { InputError } from '../core/errors.js';
import { assertRegularFile, MAX_BYTES, readRegularFile } from '../core/regular-file.js';
import { readYaml as parseYaml } from '../core/yaml-safe.js';
import { logger } from '../core/log.js';
import { missingConfigFiles } from '../core/config-files.js';
import { checkRunConfig } from './config-check.js';
import { resolveConfigPaths } from './setup/config-paths.js';

const log = logger('config');

/** `distributed`: the config of a distributed run (`rft coordinator`), which reads fewer fields (config-reads.ts). */
export function loadRunConfig(file: string, opts: { distributed?: boolean } = {}): RunConfig {
  const raw = readYaml(file);
  // The schema refuses fields this run would not read too (config-reads.ts).
  const parsed = validateRunConfig(raw, opts);
  // A renamed key still loads (config-aliases.ts): say its new name once per load.
  for (const w of parsed.warnings) log.warn(`${file}: field '${w.path}': ${w.message}`);
  // Names against the registries (algorithms of every stage, sampler, storage, operators): all before any work.
  // A taskset / eval / experts file that is not there too, with its path (not an ENOENT at step 0).
  const issues = parsed.config ? [...checkRunConfig(parsed.config), ...missingConfigFiles(raw, file)] : parsed.issues;
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
      `invalid config, 1 problem(s):\n  ${file}: field 'workflow.file': ${noFileMessage(config.workflow.file ?? code, code)}`,
      { file, field: 'workflow.file' },
    );
  // A FIFO or a device there would hang the import that loads it.
  if (code) {
    try {
      assertRegularFile(code, MAX_BYTES.json);
    } catch (e) {
      throw new InputError(`invalid config, 1 problem(s):\n  ${file}: field 'workflow.file': ${(e as Error).message}`, {
        file,
        field: 'workflow.file',
      });
    }
  }
  return resolved;
}

/**
 * A YAML (or JSON) file's value; unreadable, not a regular file, over the size cap, bad syntax or
 * too many aliases is an InputError at the file (and line).
 */
function readYaml(file: string): unknown {
  let text: string;
  try {
    text = readRegularFile(file, 'utf8', MAX_BYTES.config);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`cannot read config (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { file });
  }
  const r = parseYaml(text);
  if (!r.ok) throw new InputError(r.problems[0]!.message, { file, line: r.problems[0]!.line });
  return r.value;
}

/**
 * The one reader of a config a run stored when it started: the run registry's record (a resume), its
 * run folder's config.yaml (explorer and trainer processes), a distributed run's `dist:config` row.
 * It was checked whole then (loadRunConfig, runJob); here only its fields are (not what its run reads:
 * config-reads.ts), so a config written back with its defaults filled in, or stored by a version that
 * refused fewer fields, still resumes. `from` names where it is stored (a file, or the run and its
 * database) for the error.
 */
export function storedRunConfig(raw: unknown, from: string): RunConfig {
  const { config, issues } = validateRunConfig(raw, { stored: true });
  if (config) return config;
  const lines = issues.map((i) => `field '${i.path}': ${i.message}`);
  throw new InputError(`stored config is invalid, ${issues.length} problem(s):\n  ${lines.join('\n  ')}`, {
    file: from,
  });
}

/** A run folder's config.yaml, as the coordinator wrote it (runJob). */
export function readRunFolderConfig(runDir: string): RunConfig {
  const file = join(runDir, 'config.yaml');
  return storedRunConfig(readYaml(file), file);
}
