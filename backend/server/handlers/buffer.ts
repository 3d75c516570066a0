// buffer/* requests: list with filters (paged for the virtualised list), counts, get, group, export.
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { RpcHost } from '../rpc.js';
import type { BufferSessions } from '../sessions.js';
import { NotAvailableError } from '../errors.js';
import { InputError } from '../../core/errors.js';
import type { WorkspacePaths } from '../confine.js';

export const MAX_PAGE = 5000;

/** A page's offset or limit: a number >= 0 (floored), else an error naming the field (NaN reached SQL as "datatype mismatch"). */
function pageNumber(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
    throw new InputError(`a whole number >= 0, got ${v === undefined ? 'nothing' : JSON.stringify(v)}`, { field });
  return Math.floor(v);
}

export function registerBuffer(rpc: RpcHost, sessions: BufferSessions, paths: WorkspacePaths): void {
  rpc.on('buffer/open', async (p) => {
    const s = await sessions.open(p, true);
    return { path: s.buffer.path, counts: await s.buffer.counts() };
  });
  rpc.on('buffer/list', async (p) => {
    const s = await sessions.open(p.buffer);
    const limit = Math.min(MAX_PAGE, pageNumber(p.limit, 'limit'));
    const offset = pageNumber(p.offset ?? 0, 'offset');
    return s.buffer.list({ filter: p.filter, sort: p.sort, descending: p.descending, offset, limit });
  });
  rpc.on('buffer/counts', async (p) => (await sessions.open(p.buffer)).buffer.counts());
  rpc.on('buffer/get', async (p) => (await sessions.open(p.buffer)).buffer.get(p.id));
  rpc.on('buffer/group', async (p) => (await sessions.open(p.buffer)).buffer.group(p.groupId));
  rpc.on('buffer/taskStats', async (p) => {
    const s = await sessions.open(p.buffer);
    if (!s.buffer.taskStats) throw new NotAvailableError('task statistics of this buffer');
    return s.buffer.taskStats(p.runId);
  });
  rpc.on('buffer/synthesized', async (p) => {
    const s = await sessions.open(p.buffer);
    if (!s.buffer.synthesized) throw new NotAvailableError('synthesized tasks of this buffer');
    return s.buffer.synthesized(p.runId, Math.max(0, Math.min(MAX_PAGE, Math.floor(p.limit ?? 200))));
  });
  rpc.on('buffer/tasks', async (p) => {
    const s = await sessions.open(p.buffer);
    if (!s.buffer.tasks) throw new NotAvailableError('the tasks of this buffer');
    return s.buffer.tasks(p.runId, Math.max(0, Math.min(MAX_PAGE, Math.floor(p.limit ?? 1000))));
  });
  rpc.on('buffer/pairs', async (p) => {
    const s = await sessions.open(p.buffer);
    if (!s.buffer.pairs) throw new NotAvailableError('the preference pairs of this buffer');
    return s.buffer.pairs(p.runId);
  });
  rpc.on('buffer/export', async (p) => {
    // Resolved against the workspace (never the server's cwd) and refused outside it.
    const file = paths.writable(p.file, 'file');
    const s = await sessions.open(p.buffer);
    const out = createWriteStream(file, { encoding: 'utf8' });
    let written = 0;
    for await (const e of s.buffer.iterate(p.filter)) {
      if (!out.write(JSON.stringify(e) + '\n')) await once(out, 'drain');
      written++;
    }
    out.end();
    await once(out, 'finish');
    return { file, written };
  });
}
