// feedback/* requests: every change goes into the buffer through the feedback port, then the
// new counts are pushed to the client so the sidebar updates at once.
import type { RpcHost } from '../rpc.js';
import type { BufferSessions } from '../sessions.js';
import { InputError } from '../../core/errors.js';
import { NotAvailableError } from '../errors.js';
import type { BufferRef } from '../../core/protocol.js';

export function registerFeedback(rpc: RpcHost, sessions: BufferSessions): void {
  const fb = async (ref: BufferRef | undefined) => {
    const s = await sessions.open(ref);
    if (!s.feedback) throw new NotAvailableError('feedback on this buffer');
    return s.feedback;
  };
  const changed = async (ref: BufferRef | undefined) => {
    const s = await sessions.open(ref);
    rpc.notify('buffer/changed', { path: s.buffer.path, counts: await s.buffer.counts() });
  };
  rpc.on('feedback/rate', async (p) => {
    if (!Number.isFinite(p.rating)) throw new InputError('rating must be a number', { field: 'rating' });
    const r = await (await fb(p.buffer)).rate(p.id, p.rating, p.note);
    await changed(p.buffer);
    return r;
  });
  rpc.on('feedback/promote', async (p) => {
    if (p.editedResponse !== undefined && p.editedResponse.trim() === '') {
      throw new InputError('edited response is empty', { field: 'editedResponse' });
    }
    const r = await (await fb(p.buffer)).promote(p.id, p.editedResponse);
    await changed(p.buffer);
    return r;
  });
  rpc.on('feedback/reject', async (p) => {
    const r = await (await fb(p.buffer)).reject(p.id, p.note);
    await changed(p.buffer);
    return r;
  });
  rpc.on('feedback/addExpert', async (p) => {
    if (!p.response.trim()) throw new InputError('expert response is empty', { field: 'response' });
    if (!p.taskId.trim()) throw new InputError('task id is empty', { field: 'taskId' });
    const r = await (await fb(p.buffer)).addExpert(p.taskId, p.prompt, p.response, p.runId);
    await changed(p.buffer);
    return r;
  });
  rpc.on('feedback/bulkPromote', async (p) => {
    if (!Number.isInteger(p.topK) || p.topK < 1)
      throw new InputError('topK must be a positive integer', { field: 'topK' });
    const r = await (await fb(p.buffer)).bulkPromote(p.topK, p.filter);
    await changed(p.buffer);
    return r;
  });
  rpc.on('feedback/bulkPreview', async (p) => {
    if (!Number.isInteger(p.topK) || p.topK < 1)
      throw new InputError('topK must be a positive integer', { field: 'topK' });
    return (await fb(p.buffer)).bulkPreview(p.topK, p.filter);
  });
  rpc.on('feedback/undo', async (p) => {
    const undone = await (await fb(p.buffer)).undo(p.changeId);
    await changed(p.buffer);
    return { undone };
  });
}
