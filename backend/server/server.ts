// The JSON-RPC server the extension talks to: wires the handler groups to a connection and
// forwards backend log lines to the client as `log/line` notifications.
import type { MessageConnection } from 'vscode-jsonrpc/node';
import { setLogSink, type LogLevel } from '../core/log.js';
import { PROTOCOL_VERSION, type EngineSummary, type ServerCapabilities } from '../core/protocol.js';
import { engineSummary } from '../model/engine-summary.js';
import type { Disposable, ServerDeps } from './ports.js';
import { rpcHost } from './rpc.js';
import { BufferSessions } from './sessions.js';
import { registerBuffer } from './handlers/buffer.js';
import { registerFeedback } from './handlers/feedback.js';
import { registerTaskset } from './handlers/taskset.js';
import { registerRuns } from './handlers/runs.js';
import { registerWorkers } from './handlers/workers.js';
import { registerConfig } from './handlers/config.js';
import { ConfigThread } from './config-check/thread.js';
import { registerModels } from './handlers/models.js';
import { registerRewardModel } from './handlers/reward-model.js';
import { registerServe } from './handlers/serve.js';
import { watchBufferCounts } from './handlers/buffer-watch.js';
import { UnavailableRunController } from './run-controller.js';

export const SERVER_VERSION = `0.1.0+p${PROTOCOL_VERSION}`;

export interface RunningServer {
  capabilities: ServerCapabilities;
  dispose(): Promise<void>;
  /** Resolves when the client asked to shut down or the connection closed. */
  closed: Promise<void>;
}

export function startServer(
  conn: MessageConnection,
  deps: ServerDeps,
  opts: { forwardLogs?: boolean } = {},
): RunningServer {
  const rpc = rpcHost(conn);
  const sessions = new BufferSessions(deps.buffers, deps.defaultBuffer);
  const capabilities: ServerCapabilities = {
    buffer: !!deps.buffers,
    feedback: !!deps.buffers,
    taskset: !!deps.tasksets,
    runs: !!deps.runs,
    runControl: !(deps.control instanceof UnavailableRunController),
  };
  const subs: Disposable[] = [];
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));

  rpc.on('server/hello', () => ({ serverVersion: SERVER_VERSION, pid: process.pid, capabilities }));
  // Probed once (loading Dawn for a GPU adapter takes a moment), on first ask.
  let engine: Promise<EngineSummary> | undefined;
  rpc.on('server/engine', () => (engine ??= engineSummary()));
  rpc.on('server/shutdown', () => {
    setImmediate(resolveClosed);
    return null;
  });
  registerBuffer(rpc, sessions, deps.paths);
  registerFeedback(rpc, sessions);
  // Each client's config checks parse YAML in a thread of their own, never on the main thread.
  const configThread = new ConfigThread();
  subs.push({ dispose: () => configThread.stop() });
  registerConfig(rpc, deps.paths, configThread);
  registerModels(rpc, deps.paths);
  registerRewardModel(rpc, deps.paths, deps.runs);
  registerServe(rpc, deps.paths);
  subs.push(registerTaskset(rpc, deps.tasksets, deps.paths));
  subs.push(registerRuns(rpc, deps.runs, deps.control));
  subs.push(registerWorkers(rpc));
  subs.push(watchBufferCounts(rpc, sessions));

  if (opts.forwardLogs) {
    // Log lines become notifications (the extension's LogOutputChannel); stderr keeps only what
    // Node itself prints (crashes), which the extension shows as errors.
    setLogSink((level: LogLevel, scope, msg, fields) => rpc.notify('log/line', { level, scope, msg, fields }));
  }
  conn.onClose(() => resolveClosed());
  conn.listen();
  return {
    capabilities,
    closed,
    async dispose() {
      for (const s of subs) await s.dispose();
      await sessions.closeAll();
    },
  };
}
