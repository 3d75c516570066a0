// config/validate: a run config (`*.rft.yaml`) checked against the schema, each problem at the line
// of its key, so the editor shows them in Problems before (and instead of) starting a run.
import { readFileSync } from 'node:fs';
import type { RpcHost } from '../rpc.js';
import type { WorkspacePaths } from '../confine.js';
import { parse } from 'yaml';
import { configIssuesAt, issuesAtLines } from '../../core/config-lines.js';
import { validateRunConfig } from '../../core/config.js';
import { missingConfigFiles } from '../../core/config-files.js';
import type { ConfigIssueAt } from '../../core/protocol.js';
import { NotFoundError } from '../errors.js';

export function registerConfig(rpc: RpcHost, paths: WorkspacePaths): void {
  rpc.on('config/validate', async (p) => {
    let text = p.text;
    if (text === undefined) {
      const file = paths.inside(p.file, 'file');
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        throw new NotFoundError(`config '${p.file}' not found`);
      }
    }
    const issues = configIssuesAt(text);
    return { issues: issues.length ? issues : deepIssues(text, insideOrUndefined(paths, p.file)) };
  });
}

/**
 * What `rft run` would also refuse in a schema-valid config and core can tell: numbers that are not
 * finite (`.inf`, `.nan`), taskset / eval / experts files that are not there. Names against the registries (coordinator/config-check.ts) are checked by
 * `rft run` / `--check` only: they load the trainer's tensor engine, which the server keeps out of
 * its bundle for a fast start.
 */
function deepIssues(text: string, file: string | undefined): ConfigIssueAt[] {
  const raw: unknown = parse(text) ?? {};
  const v = validateRunConfig(raw);
  // The files it names that are not there (the template's placeholder `tasksets/math.jsonl`).
  return v.config ? (file ? issuesAtLines(text, missingConfigFiles(raw, file)) : []) : issuesAtLines(text, v.issues);
}

/** The config's path when inside the workspace (unsaved text of a file elsewhere: no file checks). */
function insideOrUndefined(paths: WorkspacePaths, file: string): string | undefined {
  try {
    return paths.inside(file, 'file');
  } catch {
    return undefined;
  }
}
