// What the extension knows about the backend's data, shared by the sidebar, status bar and
// webviews: the open buffer and its counts, the runs. Updated from requests and notifications.
import * as vscode from 'vscode';
import type { BufferCounts, EngineSummary, RunInfo } from '../backend/core/protocol.js';
import type { BackendClient } from './backend/client.js';

export class StudioState implements vscode.Disposable {
  bufferPath: string | undefined;
  counts: BufferCounts | undefined;
  runs: RunInfo[] = [];
  engine: EngineSummary | undefined;
  /** What Dawn printed while this backend probed for a GPU: the reason it found none, in its words. */
  dawnSaid: string[] = [];
  /** Runs asked to stop or pause and not yet ended (a step finishes first): `stopping…` / `pausing…`. */
  readonly pending = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<'buffer' | 'runs'>();
  readonly onDidChange = this.emitter.event;
  private readonly subs: { dispose(): void }[] = [];

  constructor(readonly client: BackendClient) {
    this.subs.push(
      client.onNotification('buffer/changed', (c) => {
        if (this.bufferPath && c.path !== this.bufferPath) return;
        this.bufferPath = c.path;
        this.counts = c.counts;
        this.emitter.fire('buffer');
      }),
      client.onNotification('run/status', (r) => {
        const i = this.runs.findIndex((x) => x.id === r.id);
        if (i >= 0) this.runs[i] = r;
        else this.runs.push(r);
        this.emitter.fire('runs');
      }),
      // After a restart the backend knows nothing: open the buffer again.
      client.onStarted(() => {
        this.dawnSaid = [];
        if (this.bufferPath) void this.openBuffer({ path: this.bufferPath }).catch(() => undefined);
        void this.refreshRuns().catch(() => undefined);
        void this.refreshEngine().catch(() => undefined);
      }),
    );
  }

  /** The tensor engine the backend's runs use (rftStudio.engine; a GPU adapter by name), for the status bar. */
  /** A line of Dawn's (manager.ts onDawnLine): kept (the last 10) for the status bar's reason. */
  dawnLine(line: string): void {
    this.dawnSaid = [...this.dawnSaid, line].slice(-10);
    this.emitter.fire('runs');
  }

  async refreshEngine(): Promise<void> {
    this.engine = await this.client.request('server/engine', {});
    this.emitter.fire('runs');
  }

  async openBuffer(ref: { path?: string; runId?: string }): Promise<void> {
    const r = await this.client.request('buffer/open', ref);
    this.bufferPath = r.path;
    this.counts = r.counts;
    this.emitter.fire('buffer');
  }

  async refreshCounts(): Promise<void> {
    if (!this.bufferPath) return;
    this.counts = await this.client.request('buffer/counts', { buffer: { path: this.bufferPath } });
    this.emitter.fire('buffer');
  }

  async refreshRuns(): Promise<void> {
    const before = new Map(this.runs.map((r) => [r.id, r]));
    // The registry records the step at checkpoints; live status notifications know the newer one.
    // A run seen running keeps the newer step (also when it has just failed or stopped there), so
    // the Runs view, the dashboard and the notifications agree.
    this.runs = (await this.client.request('runs/list', {})).map((r) => {
      const b = before.get(r.id);
      return b?.status === 'running' && (b.step ?? -1) > (r.step ?? -1)
        ? { ...r, step: b.step, reward: r.reward ?? b.reward }
        : r;
    });
    this.emitter.fire('runs');
  }

  /** Runs `fn` (a stop or pause request) with the run shown as `what` until it returns. */
  async whilePending<T>(runId: string, what: string, fn: () => Promise<T>): Promise<T> {
    this.pending.set(runId, what);
    this.emitter.fire('runs');
    try {
      return await fn();
    } finally {
      this.pending.delete(runId);
      this.emitter.fire('runs');
    }
  }

  get activeRun(): RunInfo | undefined {
    return this.runs.find((r) => r.status === 'running') ?? this.runs.find((r) => r.status === 'paused');
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.emitter.dispose();
  }
}
