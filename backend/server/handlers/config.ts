// config/validate: a run config (`*.rft.yaml`) checked against the schema, each problem at the line
// of its key, so the editor shows them in Problems before (and instead of) starting a run.
import { readFileSync } from 'node:fs';
import type { RpcHost } from '../rpc.js';
import type { WorkspacePaths } from '../confine.js';
import { configIssuesAt } from '../../core/config-lines.js';
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
    return { issues: configIssuesAt(text) };
  });
}
