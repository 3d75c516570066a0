// taskset/* requests: validation on demand (also of unsaved editor text) and file watching,
// whose reports are pushed as `taskset/report` notifications (the Problems panel).
import type { RpcHost } from '../rpc.js';
import type { Disposable, TasksetPort } from '../ports.js';
import { NotAvailableError } from '../errors.js';
import { InputError } from '../../core/errors.js';
import type { WorkspacePaths } from '../confine.js';

export function registerTaskset(rpc: RpcHost, tasksets: TasksetPort | undefined, paths: WorkspacePaths): Disposable {
  let watcher: Disposable | undefined;
  const need = () => {
    if (!tasksets) throw new NotAvailableError('taskset validation');
    return tasksets;
  };
  rpc.on('taskset/validate', async (p) => need().validate(paths.inside(p.file, 'file'), p.text));
  rpc.on('taskset/watch', async (p) => {
    const t = need();
    if (!Array.isArray(p.files)) throw new InputError('a list of files', { field: 'files' });
    const files = p.files.map((f, i) => paths.inside(f, `files[${i}]`));
    await watcher?.dispose();
    watcher = t.watch(files, (r) => rpc.notify('taskset/report', r));
    return { watching: p.files.length };
  });
  return { dispose: async () => watcher?.dispose() };
}
