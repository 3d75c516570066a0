// TasksetPort over the buffer's taskset loader and chokidar watcher: reports with one issue per
// bad record (file, line, field) for the Problems panel; valid tasks around them still count.
import { loadTaskset, parseTaskset } from '../../buffer/taskset/load.js';
import { watchTaskset } from '../../buffer/taskset/watch.js';
import type { LoadResult, TaskRecordError } from '../../buffer/taskset/types.js';
import type { TasksetReport } from '../../core/protocol.js';
import type { Disposable, TasksetPort } from '../ports.js';

function report(
  file: string,
  tasks: number,
  errors: TaskRecordError[],
  warnings: TaskRecordError[] = [],
): TasksetReport {
  const issue = (e: TaskRecordError, severity: 'error' | 'warning') => ({
    file,
    line: e.line,
    ...(e.field && !e.field.startsWith('(') ? { field: e.field } : {}),
    message: e.message,
    severity,
  });
  return {
    file,
    tasks,
    issues: [...warnings.map((w) => issue(w, 'warning')), ...errors.map((e) => issue(e, 'error'))].sort(
      (a, b) => a.line - b.line,
    ),
  };
}

export const tasksetPort: TasksetPort = {
  async validate(file, text, reading) {
    let r: LoadResult;
    // As a run config reads the file: its field names mapped, records without an id numbered.
    const opts = reading
      ? { fields: reading.format, role: reading.role, domain: reading.domain, defaultIds: true }
      : {};
    try {
      r = text === undefined ? await loadTaskset(file, opts) : parseTaskset(text, file, opts);
    } catch (err) {
      // Unreadable file or unknown format: one issue on line 1, still a report (not a request failure).
      return report(file, 0, [{ file, line: 1, field: '(file)', message: (err as Error).message }]);
    }
    return report(file, r.tasks.length, r.errors, r.warnings);
  },
  watch(files, onReport): Disposable {
    const w = watchTaskset(files, (c) => onReport(report(c.file, c.tasks.length, c.errors, c.warnings)));
    return { dispose: () => w.close() };
  },
};
