// config/validate: a run config (`*.rft.yaml`) checked against the schema, each problem at the line
// of its key, so the editor shows them in Problems before (and instead of) starting a run. Files it
// names that are missing are problems too; `deep` (the saved file: on open, on save, before Start
// Training) adds what `rft run --check` refuses (unknown reward / workflow / algorithm names).
import type { RpcHost } from '../rpc.js';
import type { WorkspacePaths } from '../confine.js';
import { InputError } from '../../core/errors.js';
import { MAX_BYTES, readRegularFileAsync } from '../../core/regular-file.js';
import { issuesAtLines } from '../../core/config-lines.js';
import { NotFoundError } from '../errors.js';
import { cliConfigIssues } from '../adapters/config-check-cli.js';
import type { ConfigThread } from '../config-check/thread.js';

export function registerConfig(rpc: RpcHost, paths: WorkspacePaths, configThread: ConfigThread): void {
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
    // The editor's unsaved text has the file's cap too.
    if (Buffer.byteLength(text) > MAX_BYTES.config)
      throw new InputError(
        `is ${Buffer.byteLength(text)} bytes, over the limit of ${MAX_BYTES.config} for a run config`,
        {
          file,
        },
      );
    // Parsed in the config thread: a big or hostile YAML never holds the main thread (thread.ts).
    let r: Awaited<ReturnType<ConfigThread['check']>>;
    try {
      r = await configThread.check(text, file);
    } catch (e) {
      // Past its deadline (or the thread died): an issue on the file, not a failed request.
      return { issues: [{ line: 1, field: '(file)', message: (e as Error).message }] };
    }
    if (!r.clean || !p.deep || text !== onDisk) return { issues: r.issues };
    return { issues: [...r.issues, ...issuesAtLines(text, await cliConfigIssues(file, paths.given))] };
  });
}
