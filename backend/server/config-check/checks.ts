// The config/validate checks that parse YAML (schema at lines, finite numbers, files named that are
// missing or not files): run in the config thread (thread.ts), never on the server's main thread.
import { configIssuesAt, issuesAtLines } from '../../core/config-lines.js';
import { validateRunConfig } from '../../core/config.js';
import type { ConfigIssueAt } from '../../core/protocol.js';
import { readYaml } from '../../core/yaml-safe.js';
import { missingFiles } from '../adapters/config-check-cli.js';

/** The issues of TEXT (the config FILE's text) and whether they are only warnings (then the deep check may follow). */
export function checkConfigText(text: string, file: string): { issues: ConfigIssueAt[]; clean: boolean } {
  const issues = configIssuesAt(text);
  // Warnings (a renamed key's old spelling) do not stop the checks that follow, nor a run.
  const warnings = issues.filter((i) => i.severity === 'warning');
  if (issues.length > warnings.length) return { issues, clean: false };
  const shallow = [...finiteIssues(text), ...issuesAtLines(text, missingFiles(text, file))];
  return { issues: [...warnings, ...shallow], clean: shallow.length === 0 };
}

/**
 * What `rft run` would also refuse in a schema-valid config and core can tell: numbers that are not
 * finite (`.inf`, `.nan`). Names against the registries (coordinator/config-check.ts) come from
 * `rft run --check` (deep): they load the trainer's tensor engine, which the server keeps out of its
 * bundle for a fast start.
 */
function finiteIssues(text: string): ConfigIssueAt[] {
  const read = readYaml(text);
  const v = validateRunConfig((read.ok ? read.value : undefined) ?? {});
  return v.config ? [] : issuesAtLines(text, v.issues);
}
