// taskset/* requests: validation on demand (also of unsaved editor text) and file watching,
// whose reports are pushed as `taskset/report` notifications (the Problems panel).
import type { RpcHost } from '../rpc.js';
import type { Disposable, TasksetPort } from '../ports.js';
import { NotAvailableError } from '../errors.js';

export function registerTaskset(rpc: RpcHost, tasksets: TasksetPort | undefined): Disposable {
  let watcher: Disposable | undefined;
  const need = () => {
    if (!tasksets) throw new NotAvailableError('taskset validation');
    return tasksets;
  };
  rpc.on('taskset/validate', async (p) => need().validate(p.file, p.text));
  rpc.on('taskset/watch', async (p) => {
    const t = need();
    await watcher?.dispose();
    watcher = t.watch(p.files, (r) => rpc.notify('taskset/report', r));
    return { watching: p.files.length };
  });
  return { dispose: async () => watcher?.dispose() };
}
