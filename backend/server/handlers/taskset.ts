// taskset/* requests: validation on demand (also of unsaved editor text) and file watching,
// whose reports are pushed as `taskset/report` notifications (the Problems panel).
import type { RpcHost } from '../rpc.js';
import type { Disposable, TasksetPort } from '../ports.js';
import { NotAvailableError } from '../errors.js';
import { InputError } from '../../core/errors.js';
import type { WorkspacePaths } from '../confine.js';
import type { TasksetReading } from '../../core/protocol.js';
import { MAPPING_KEYS } from '../../buffer/taskset/fields.js';

const DOMAINS = ['math', 'code', 'k12', 'vision', 'multiturn', 'text'];

/** A `format:` mapping's keys are the config's (prompt_key, …), each a field name. */
export function checkFormat(format: unknown, field: string): Record<string, string> | undefined {
  if (format === undefined) return undefined;
  if (typeof format !== 'object' || format === null || Array.isArray(format))
    throw new InputError('an object', { field });
  for (const [k, v] of Object.entries(format)) {
    if (!(MAPPING_KEYS as string[]).includes(k))
      throw new InputError(`unknown format key (one of ${MAPPING_KEYS.join(', ')})`, { field: `${field}.${k}` });
    if (typeof v !== 'string' || !v) throw new InputError('a field name', { field: `${field}.${k}` });
  }
  return format as Record<string, string>;
}

/** A reading's fields are what a run config's `format:` / role / domain may say, nothing else. */
function checkReading(r: TasksetReading | undefined): TasksetReading | undefined {
  if (r === undefined) return undefined;
  if (typeof r !== 'object' || r === null) throw new InputError('an object', { field: 'reading' });
  checkFormat(r.format, 'reading.format');
  if (r.role !== undefined && r.role !== 'task' && r.role !== 'expert')
    throw new InputError("'task' or 'expert'", { field: 'reading.role' });
  if (r.domain !== undefined && !DOMAINS.includes(r.domain))
    throw new InputError(`one of ${DOMAINS.join(', ')}`, { field: 'reading.domain' });
  return r;
}

export function registerTaskset(rpc: RpcHost, tasksets: TasksetPort | undefined, paths: WorkspacePaths): Disposable {
  let watcher: Disposable | undefined;
  const need = () => {
    if (!tasksets) throw new NotAvailableError('taskset validation');
    return tasksets;
  };
  rpc.on('taskset/validate', async (p) =>
    need().validate(paths.inside(p.file, 'file'), p.text, checkReading(p.reading)),
  );
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
