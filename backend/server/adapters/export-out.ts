// Where `models/export` may write: inside the workspace (confine.ts), and never over what the
// workspace itself is made of. The workspace root, `.rft` (registry, runs, buffers, logs) and
// anything in it, and any folder that holds a run or lies inside one are refused, with or without
// `force`: an export there would mix its files into the user's sources or a run's state.
import { join } from 'node:path';
import { ForbiddenError } from '../errors.js';
import { realOfExisting, within, type WorkspacePaths } from '../confine.js';

export function checkExportOut(out: string, paths: WorkspacePaths, runDirs: string[]): void {
  const real = realOfExisting(out);
  const refuse = (why: string) =>
    new ForbiddenError(
      `field 'out': ${out} ${why}: choose a new folder for the export (e.g. ${join(paths.given, 'exports')})`,
    );
  if (real === paths.root) throw refuse('is the workspace folder itself');
  const rft = realOfExisting(join(paths.given, '.rft'));
  if (within(rft, real)) throw refuse("is the workspace's .rft folder or inside it (runs, buffers, the run registry)");
  for (const d of runDirs) {
    const run = realOfExisting(d);
    if (within(real, run)) throw refuse(`holds the run folder ${d}`);
    if (within(run, real)) throw refuse(`is inside the run folder ${d}`);
  }
}
