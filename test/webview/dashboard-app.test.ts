// The training dashboard in a DOM: live metric points into the charts, run status and buttons.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mountDashboard } from '../../webview/dashboard/app.js';
import { decimationStride, extent, niceTicks } from '../../webview/dashboard/chart.js';
import type { DashboardRequests } from '../../webview/dashboard/protocol.js';
import { host, until } from './dom.js';

test('chart maths: extent, round ticks, decimation', () => {
  assert.deepEqual(extent([{ key: 'a', xs: [1, 2, 3], ys: [0.5, NaN, 2] }]), { x0: 1, x1: 3, y0: 0.5, y1: 2 });
  assert.equal(extent([{ key: 'a', xs: [], ys: [] }]), undefined);
  const flat = extent([{ key: 'a', xs: [5], ys: [2] }])!;
  assert.ok(flat.y0 < 2 && flat.y1 > 2 && flat.x1 > flat.x0);
  assert.deepEqual(niceTicks(0, 1, 4), [0, 0.5, 1]);
  assert.deepEqual(niceTicks(0, 10, 5), [0, 2, 4, 6, 8, 10]);
  assert.deepEqual(niceTicks(-0.3, 0.3, 3), [-0.2, 0, 0.2]);
  assert.equal(decimationStride(100, 300), 1);
  assert.equal(decimationStride(100_000, 500), 100);
});

test('live metrics reach the charts of their run only, in step order; status drives the buttons', async () => {
  const calls: string[] = [];
  const h = host<DashboardRequests>({
    runs: () => [],
    status: () => ({ id: 'r1', status: 'running', step: 3, totalSteps: 10, components: [{ name: 'explorer', state: 'generating', idleFraction: 0.25 }], config: { algorithm: 'mix' }, checkpoints: [{ version: 1, path: '/ck/1' }] }),
    metrics: () => [{ runId: 'r1', step: 1, at: 0, values: { reward: 0.1, kl: 0.01 } }, { runId: 'r1', step: 2, at: 0, values: { reward: 0.2 } }],
    evaluate: (p: never) => (calls.push(`evaluate ${JSON.stringify(p)}`), { accuracy: 0.375, tasks: 16 }),
    stop: () => (calls.push('stop'), null),
    resume: () => (calls.push('resume'), null),
  });
  const app = mountDashboard(h.root, h.ipc as never, undefined);
  h.notify('select', { runId: 'r1' });
  await app.firstPaint;
  const reward = app.charts.find((c) => c.keys.includes('reward'))!;
  await until(() => reward.series.get('reward')!.ys.length === 2, 'history loaded');
  assert.deepEqual(reward.series.get('reward')!.ys, [0.1, 0.2]);
  assert.deepEqual(app.charts.find((c) => c.keys.includes('kl'))!.series.get('kl')!.ys, [0.01]);

  h.notify('metrics', { runId: 'r1', step: 3, at: 0, values: { reward: 0.3, 'idle/trainer': 0.5 } });
  h.notify('metrics', { runId: 'other', step: 4, at: 0, values: { reward: 9 } });
  h.notify('metrics', { runId: 'r1', step: 2, at: 0, values: { reward: 9 } });
  await until(() => reward.series.get('reward')!.ys.length === 3, 'live point');
  assert.deepEqual(reward.series.get('reward')!.ys, [0.1, 0.2, 0.3]);
  assert.deepEqual(app.charts.find((c) => c.keys.includes('idle/trainer'))!.series.get('idle/trainer')!.ys, [0.5]);

  assert.equal(h.document.querySelector('.status')!.textContent, 'running · step 3/10');
  assert.match(h.document.querySelector('.component')!.textContent!, /explorer generating · idle 25%/);
  assert.match(h.document.querySelector('.config')!.textContent!, /"algorithm": "mix"/);
  assert.ok(!h.document.getElementById('stop')!.hasAttribute('disabled'));
  assert.ok(h.document.getElementById('resume')!.hasAttribute('disabled'));
  const ev = h.document.querySelector('.checkpoint vscode-button')!;
  ev.dispatchEvent(new (h.window as unknown as typeof globalThis).Event('click'));
  await until(() => calls.length === 1, 'evaluate');
  assert.equal(calls[0], 'evaluate {"runId":"r1","checkpoint":"/ck/1"}');
  // The result is shown next to the checkpoint.
  await until(() => /accuracy/.test(h.document.querySelector('.checkpoint .eval-result')!.textContent ?? ''), 'evaluation result');
  assert.equal(h.document.querySelector('.checkpoint .eval-result')!.textContent, 'accuracy 37.5% on 16 tasks');

  h.notify('status', { id: 'r1', status: 'paused', step: 3 });
  await until(() => h.document.getElementById('resume')!.hasAttribute('disabled') === false, 'resume enabled');
  assert.ok(h.document.getElementById('stop')!.hasAttribute('disabled'));
  assert.deepEqual(h.api.state, { runId: 'r1' });
  await h.close();
});

test('a failing request is shown, not swallowed', async () => {
  const h = host<DashboardRequests>({
    status: () => {
      throw new Error('starting a training run is not available yet');
    },
    metrics: () => [],
  });
  const app = mountDashboard(h.root, h.ipc as never, { runId: 'r9' });
  await app.firstPaint;
  assert.match(h.document.querySelector('.message')!.textContent!, /not available yet/);
  await h.close();
});
