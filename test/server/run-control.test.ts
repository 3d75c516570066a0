// Run control through `rft serve` with the process RunController and a real (tiny) run: start from
// a config file, live `run/metrics` (with the dashboard's keys) and `run/status` notifications,
// live buffer counts, per-task stats, a promoted expert that the trainer samples, stop with a
// checkpoint, evaluate that checkpoint on the run's held-out split, resume, stop again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BufferCounts, MetricsPoint, RunInfo } from '../../backend/core/protocol.js';
import { spawnServe } from '../../tools/spawn-serve.js';
import { tinyRunConfig } from './tiny-run-config.js';

async function until<T>(fn: () => T | Promise<T>, what: string, ms = 90_000): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test(
  'start, live metrics and counts, promoted expert sampled, stop, evaluate, resume',
  { timeout: 240_000 },
  async () => {
    const ws = mkdtempSync(join(tmpdir(), 'rft-runctl-'));
    writeFileSync(join(ws, 'tiny.rft.yaml'), tinyRunConfig({ warmupSteps: 3, mixSeconds: 300 }));
    // The run child processes run this checkout's source (not a possibly stale dist/).
    const s = spawnServe(['--workspace', ws], { RFT_FROM_SOURCE: '1' });
    const metrics: MetricsPoint[] = [];
    const statuses: RunInfo[] = [];
    const counts: BufferCounts[] = [];
    s.conn.onNotification('run/metrics', (m: MetricsPoint) => void metrics.push(m));
    s.conn.onNotification('run/status', (r: RunInfo) => void statuses.push(r));
    s.conn.onNotification('buffer/changed', (c: { counts: BufferCounts }) => void counts.push(c.counts));
    try {
      assert.equal((await s.request('server/hello', { clientVersion: 'test' })).capabilities.runControl, true);
      await assert.rejects(s.request('runs/start', { configPath: 'missing.rft.yaml' }), { code: -32004 });

      const run = await s.request('runs/start', { configPath: 'tiny.rft.yaml' });
      assert.equal(run.name, 'tiny');
      const opened = await s.request('buffer/open', { runId: run.id });
      assert.equal(opened.path, run.bufferPath);

      // Live metrics: complete points (train + explore merged) under the dashboard's chart keys, in order.
      await until(
        () => metrics.some((m) => m.values.reward !== undefined && m.values['loss/total'] !== undefined),
        'a MIX step in run/metrics',
      );
      const mix = metrics.find((m) => m.values.reward !== undefined)!;
      assert.equal(mix.runId, run.id);
      for (const k of ['loss/total', 'loss/policy', 'loss/sft', 'kl', 'tokens_per_s', 'idle/trainer', 'idle/explorer'])
        assert.equal(typeof mix.values[k], 'number', k);
      const steps = metrics.map((m) => m.step);
      assert.deepEqual(
        steps,
        [...steps].sort((a, b) => a - b),
      );
      assert.equal(new Set(steps).size, steps.length, 'each step sent once');
      // runs/metrics serves the same history.
      const hist = await s.request('runs/metrics', { runId: run.id });
      assert.deepEqual(hist.find((p) => p.step === mix.step)!.values, mix.values);
      // Live status with the step, and buffer counts growing as the explorer appends.
      await until(
        () => statuses.some((r) => r.id === run.id && r.status === 'running' && (r.step ?? 0) > 0),
        'run/status with a step',
      );
      await until(() => counts.some((c) => c.usual > 0), 'buffer/changed with usual experiences');

      // Per-task stats of the run.
      const stats = await s.request('buffer/taskStats', { runId: run.id });
      assert.ok(stats.length > 0);
      for (const t of stats) {
        assert.match(t.taskId, /^reverse-train-\d+$/);
        assert.ok(t.rollouts > 0 && t.passRate >= 0 && t.passRate <= 1 && t.meanReward >= 0 && t.meanReward <= 1);
      }

      // Promote a usual experience with the right answer: the trainer samples the new expert.
      const { rows } = await s.request('buffer/list', { filter: { source: 'usual' }, offset: 0, limit: 1 });
      const exp = (await s.request('buffer/get', { id: rows[0]!.id }))!;
      const word = exp.promptText.replace(/^rev /, '');
      const promoted = await s.request('feedback/promote', {
        id: exp.id,
        editedResponse: [...word].reverse().join(''),
      });
      await until(
        async () => ((await s.request('buffer/get', { id: promoted.expertId }))?.useCount ?? 0) > 0,
        'the promoted expert to be sampled',
      );

      const stopped = await s.request('runs/stop', { runId: run.id });
      assert.equal(stopped.status, 'stopped');
      assert.ok(stopped.checkpoints!.length > 0, 'stop writes a checkpoint');
      await until(() => statuses.some((r) => r.id === run.id && r.status === 'stopped'), 'run/status stopped');

      // Evaluate the checkpoint on the run's held-out split (taskset '' = from the run's config).
      const ck = stopped.checkpoints![stopped.checkpoints!.length - 1]!;
      const ev = await s.request('runs/evaluate', { checkpoint: ck.path, taskset: '', runId: run.id });
      assert.equal(ev.tasks, 16);
      assert.ok(ev.accuracy >= 0 && ev.accuracy <= 1);
      await assert.rejects(s.request('runs/evaluate', { checkpoint: join(ws, 'nope'), taskset: '' }), { code: -32004 });

      const lastStep = metrics[metrics.length - 1]!.step;
      const resumed = await s.request('runs/resume', { runId: run.id });
      assert.equal(resumed.status, 'running');
      await until(() => metrics.some((m) => m.step > lastStep + 1), 'metrics after the resume', 120_000);
      const again = await s.request('runs/stop', { runId: run.id });
      assert.equal(again.status, 'stopped');
      // A newer checkpoint (the count stays bounded: the registry drops the pruned ones).
      const newest = (r: RunInfo) => Math.max(...r.checkpoints!.map((c) => c.version));
      assert.ok(newest(again) > newest(stopped), `v${newest(again)} after v${newest(stopped)}`);
    } finally {
      // Never leave a run behind.
      const runs = await s.request('runs/list', {}).catch(() => [] as RunInfo[]);
      for (const r of runs)
        if (r.status === 'running') await s.request('runs/stop', { runId: r.id }).catch(() => undefined);
      await s.close();
    }
  },
);
