// config/validate: a run config (`*.rft.yaml`) checked against the schema, each problem at the line
// of its key, so the editor shows them in Problems before (and instead of) starting a run. Files it
// names that are missing are problems too; `deep` (the saved file: on open, on save, before Start
// Training) adds what `rft run --check` refuses (unknown reward / workflow / algorithm names).
import type { RpcHost } from '../rpc.js';
import type { WorkspacePaths } from '../confine.js';
import { InputError } from '../../core/errors.js';
import { MAX_BYTES, readRegularFileAsync } from '../../core/regular-file.js';
import { readYaml } from '../../core/yaml-safe.js';
import { configIssuesAt, issuesAtLines } from '../../core/config-lines.js';
import { validateRunConfig } from '../../core/config.js';
import type { ConfigIssueAt } from '../../core/protocol.js';
import { NotFoundError } from '../errors.js';
import { cliConfigIssues, missingFiles } from '../adapters/config-check-cli.js';

export function registerConfig(rpc: RpcHost, paths: WorkspacePaths): void {
  rpc.on('config/validate', async (p) => {
    const file = paths.inside(p.file, 'file');
    let onDisk: string | undefined;
    try {
      // Off the main thread, and only a regular file under the cap: a FIFO here stopped every client.
      onDisk = (await readRegularFileAsync(file, MAX_BYTES.config)).toString('utf8');
    } catch (e) {
      if (p.text === undefined) {
        if (e instanceof InputError) throw e;
        throw new NotFoundError(`config '${p.file}' not found`);
      }
    }
    const text = p.text ?? onDisk!;
    // The editor's unsaved text has the file's cap too: YAML is parsed on the main thread.
    if (Buffer.byteLength(text) > MAX_BYTES.config)
      throw new InputError(
        `is ${Buffer.byteLength(text)} bytes, over the limit of ${MAX_BYTES.config} for a run config`,
        {
          file,
        },
      );
    const issues = configIssuesAt(text);
    // Warnings (a renamed key's old spelling) do not stop the checks that follow, nor a run.
    const warnings = issues.filter((i) => i.severity === 'warning');
    if (issues.length > warnings.length) return { issues };
    const shallow = [...deepIssues(text), ...issuesAtLines(text, missingFiles(text, file))];
    if (shallow.length || !p.deep || text !== onDisk) return { issues: [...warnings, ...shallow] };
    return { issues: [...warnings, ...issuesAtLines(text, await cliConfigIssues(file, paths.given))] };
  });
}

/**
 * What `rft run` would also refuse in a schema-valid config and core can tell: numbers that are not
 * finite (`.inf`, `.nan`). Names against the registries (coordinator/config-check.ts) come from
 * `rft run --check` (deep): they load the trainer's tensor engine, which the server keeps out of its
 * bundle for a fast start.
 */
function deepIssues(text: string): ConfigIssueAt[] {
  const read = readYaml(text);
  const v = validateRunConfig((read.ok ? read.value : undefined) ?? {});
  return v.config ? [] : issuesAtLines(text, v.issues);
}
