// runs/* requests: the registry answers list/status; start/stop/resume/evaluate go to the
// RunController (the coordinator), which answers NotAvailable until it is wired in.
import type { RpcHost } from '../rpc.js';
import type { Disposable, RunController, RunRegistryPort } from '../ports.js';
import { NotAvailableError, NotFoundError } from '../errors.js';

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
  rpc.on('runs/stop', async (p) => control.stop(p.runId));
  rpc.on('runs/resume', async (p) => control.resume(p.runId));
  rpc.on('runs/evaluate', async (p) => control.evaluate(p.checkpoint, p.taskset, p.runId ? { runId: p.runId } : undefined));
  rpc.on('runs/metrics', async (p) => {
    if (!control.metrics) throw new NotAvailableError('run metrics');
    return control.metrics(p.runId, p.sinceStep);
  });
  const subs: Disposable[] = [];
  if (control.onStatus) subs.push(control.onStatus((r) => rpc.notify('run/status', r)));
  if (control.onMetrics) subs.push(control.onMetrics((m) => rpc.notify('run/metrics', m)));
  return { dispose: async () => void (await Promise.all(subs.map((s) => s.dispose()))) };
}
