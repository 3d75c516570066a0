// runs/* requests: the registry answers list/status; start/stop/resume/evaluate go to the
// RunController (the coordinator), which answers NotAvailable until it is wired in.
import type { RpcHost } from '../rpc.js';
import type { Disposable, RunController, RunRegistryPort } from '../ports.js';
import { NotAvailableError, NotFoundError } from '../errors.js';
import { InputError } from '../../core/errors.js';
import { checkFormat } from './taskset.js';

export function runId(id: unknown): string {
  if (typeof id !== 'string' || !/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(id))
    throw new InputError(`not a run id: ${JSON.stringify(id)}`, { field: 'runId' });
  return id;
}

export function registerRuns(rpc: RpcHost, runs: RunRegistryPort | undefined, control: RunController): Disposable {
  const registry = () => {
    if (!runs) throw new NotAvailableError('the run registry');
    return runs;
  };
  rpc.on('runs/list', async () => (runs ? runs.list() : []));
  rpc.on('runs/status', async (p) => {
    const r = await registry().get(p.runId);
    if (!r) throw new NotFoundError(`no run '${p.runId}'`);
    const components = control.components ? await control.components(p.runId).catch(() => undefined) : undefined;
    return components ? { ...r, components } : r;
  });
  rpc.on('runs/start', async (p) => control.start(p.configPath));
  // A run id names a folder and a log file: only the characters the registry gives ids.
  rpc.on('runs/stop', async (p) => control.stop(runId(p.runId)));
  rpc.on('runs/resume', async (p) => {
    if (p.config !== undefined && p.config !== 'new' && p.config !== 'kept')
      throw new InputError(`config must be 'new' or 'kept', got ${JSON.stringify(p.config)}`, { field: 'config' });
    return control.resume(runId(p.runId), p.config);
  });
  rpc.on('runs/pause', async (p) => {
    if (!control.pause) throw new NotAvailableError('pausing a run');
    return control.pause(runId(p.runId));
  });
  rpc.on('runs/evaluate', async (p) =>
    control.evaluate(p.checkpoint, p.taskset, {
      ...(p.runId ? { runId: p.runId } : {}),
      ...(p.config ? { config: p.config } : {}),
      ...(p.format !== undefined ? { format: checkFormat(p.format, 'format') } : {}),
    }),
  );
  rpc.on('runs/metrics', async (p) => {
    if (!control.metrics) throw new NotAvailableError('run metrics');
    return control.metrics(runId(p.runId), p.sinceStep);
  });
  rpc.on('runs/log', async (p) => {
    if (!control.log) throw new NotAvailableError('run logs');
    const n = p.lines ?? 20;
    if (!Number.isInteger(n) || n < 1 || n > 10_000)
      throw new InputError('lines must be a whole number from 1 to 10000', { field: 'lines' });
    return control.log(runId(p.runId), n);
  });
  const subs: Disposable[] = [];
  if (control.onStatus) subs.push(control.onStatus((r) => rpc.notify('run/status', r)));
  if (control.onMetrics) subs.push(control.onMetrics((m) => rpc.notify('run/metrics', m)));
  return { dispose: async () => void (await Promise.all(subs.map((s) => s.dispose()))) };
}
