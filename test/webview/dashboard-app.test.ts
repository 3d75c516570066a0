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
    status: () => ({
      id: 'r1',
      status: 'running',
      step: 3,
      totalSteps: 10,
      components: [{ name: 'explorer', state: 'generating', idleFraction: 0.25 }],
      config: 'algorithm:\n  name: mix\n',
      checkpoints: [{ version: 1, path: '/ck/1' }],
    }),
    metrics: () => [
      { runId: 'r1', step: 1, at: 0, values: { reward: 0.1, kl: 0.01 } },
      { runId: 'r1', step: 2, at: 0, values: { reward: 0.2 } },
    ],
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

  h.notify('metrics', { runId: 'r1', step: 3, at: 0, values: { reward: 0.3, 'idle/trainer': 0.5 }, trained: 4 });
  h.notify('metrics', { runId: 'other', step: 4, at: 0, values: { reward: 9 } });
  await until(() => reward.series.get('reward')!.ys.length === 3, 'live point');
  assert.deepEqual(reward.series.get('reward')!.ys, [0.1, 0.2, 0.3], 'points of another run are not drawn');
  // A resumed run re-does steps after its checkpoint: the live value of a repeated step replaces the old one.
  h.notify('metrics', { runId: 'r1', step: 2, at: 0, values: { reward: 0.25 } });
  await until(() => reward.series.get('reward')!.ys[1] === 0.25, 'repeated step replaced');
  assert.deepEqual(reward.series.get('reward')!.xs, [1, 2, 3]);
  assert.deepEqual(app.charts.find((c) => c.keys.includes('idle/trainer'))!.series.get('idle/trainer')!.ys, [0.5]);

  // The live train point of step 3 says 4 steps done: the header follows it (the status answer said 3).
  assert.equal(h.document.querySelector('.status')!.textContent, 'running · step 4/10');
  assert.match(h.document.querySelector('.component')!.textContent!, /explorer generating · idle 25%/);
  assert.equal(h.document.querySelector('.config')!.textContent!, 'algorithm:\n  name: mix\n');
  assert.ok(!h.document.getElementById('stop')!.hasAttribute('disabled'));
  assert.ok(h.document.getElementById('resume')!.hasAttribute('disabled'));
  const ev = h.document.querySelector('.checkpoint vscode-button')!;
  ev.dispatchEvent(new (h.window as unknown as typeof globalThis).Event('click'));
  await until(() => calls.length === 1, 'evaluate');
  assert.equal(calls[0], 'evaluate {"runId":"r1","checkpoint":"/ck/1"}');
  // The result is shown next to the checkpoint.
  await until(
    () => /accuracy/.test(h.document.querySelector('.checkpoint .eval-result')!.textContent ?? ''),
    'evaluation result',
  );
  assert.equal(h.document.querySelector('.checkpoint .eval-result')!.textContent, 'v1: accuracy 37.5% on 16 tasks');
  // A status notification re-renders the checkpoint list: the result stays.
  h.notify('status', {
    id: 'r1',
    status: 'running',
    step: 4,
    checkpoints: [
      { version: 1, path: '/ck/1' },
      { version: 2, path: '/ck/2' },
    ],
  });
  await until(() => h.document.querySelectorAll('.checkpoint').length === 2, 'new checkpoint');
  assert.deepEqual(
    Array.from(h.document.querySelectorAll('.checkpoint')).map((c) => (c as HTMLElement).dataset.version),
    ['2', '1'],
    'newest first',
  );
  assert.equal(
    h.document.querySelector('.checkpoint[data-version="1"] .eval-result')!.textContent,
    'v1: accuracy 37.5% on 16 tasks',
  );
  assert.match(
    h.document.querySelector('.component')!.textContent!,
    /explorer generating/,
    'a status notification (no components) keeps the component states',
  );

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

test('history survives live points that arrive while it loads (merged by step); a newer selection wins', async () => {
  let releaseHistory!: () => void;
  const gate = new Promise<void>((r) => (releaseHistory = r));
  let slowStatus = true;
  const h = host<DashboardRequests>({
    status: async (p: { runId: string }) => {
      if (p.runId === 'old' && slowStatus) await new Promise((r) => setTimeout(r, 150));
      return { id: p.runId, name: p.runId, status: 'running' };
    },
    metrics: async (p: { runId: string }) => {
      if (p.runId === 'r1') await gate;
      return Array.from({ length: 5 }, (_, i) => ({
        runId: p.runId,
        step: i,
        at: 0,
        values: { reward: i / 10 },
        trained: i + 1,
      }));
    },
  });
  const app = mountDashboard(h.root, h.ipc as never, undefined);
  h.notify('select', { runId: 'r1' });
  await until(() => h.requests.some((r) => r.method === 'metrics'), 'history requested');
  // Live points for steps 4 (re-done after a resume: a new value), 5 and 6 arrive before the history answers.
  h.notify('metrics', { runId: 'r1', step: 4, at: 0, values: { reward: 0.45 }, trained: 5 });
  h.notify('metrics', { runId: 'r1', step: 5, at: 0, values: { reward: 0.5 }, trained: 6 });
  h.notify('metrics', { runId: 'r1', step: 6, at: 0, values: { reward: 0.6 }, trained: 7 });
  const reward = app.charts.find((c) => c.keys.includes('reward'))!;
  await until(() => reward.series.get('reward')!.xs.length === 3, 'live points drawn');
  releaseHistory();
  await until(() => reward.series.get('reward')!.xs.length === 7, 'history merged');
  assert.deepEqual(reward.series.get('reward')!.xs, [0, 1, 2, 3, 4, 5, 6]);
  assert.deepEqual(
    reward.series.get('reward')!.ys,
    [0, 0.1, 0.2, 0.3, 0.45, 0.5, 0.6],
    'history does not overwrite a live value',
  );
  // The status answer had no step (the registry lags): the header counts the steps the history and live points hold.
  assert.equal(h.document.querySelector('.status')!.textContent, 'running · step 7');

  // A slow answer for a run that is no longer selected does not replace the new one.
  h.notify('select', { runId: 'old' });
  h.notify('select', { runId: 'new' });
  await until(() => h.document.querySelector('h2')!.textContent === 'new', 'new run shown');
  await new Promise((r) => setTimeout(r, 250));
  assert.equal(h.document.querySelector('h2')!.textContent, 'new');
  assert.equal(app.state.runId, 'new');
  slowStatus = false;
  await h.close();
});

test('a run that starts while the shown run is over takes the dashboard; a running one is not left', async () => {
  const statuses: Record<string, string> = { done: 'completed', next: 'running', third: 'running' };
  const h = host<DashboardRequests>({
    status: (p: { runId: string }) => ({ id: p.runId, name: p.runId, status: statuses[p.runId] ?? 'running' }),
    metrics: (p: { runId: string }) => [
      { runId: p.runId, step: 0, at: 0, values: { reward: p.runId === 'next' ? 0.7 : 0.1 } },
    ],
  });
  const app = mountDashboard(h.root, h.ipc as never, { runId: 'done' });
  await app.firstPaint;
  assert.equal(h.document.querySelector('h2')!.textContent, 'done');
  h.notify('status', { id: 'next', name: 'next', status: 'running', step: 0 });
  await until(() => h.document.querySelector('h2')!.textContent === 'next', 'new run shown');
  const reward = app.charts.find((c) => c.keys.includes('reward'))!;
  await until(() => reward.series.get('reward')!.ys[0] === 0.7, 'new run history');
  assert.equal(reward.series.get('reward')!.ys.length, 1, "the old run's points are gone");
  // Another run starting while this one runs does not take the dashboard away.
  h.notify('status', { id: 'third', name: 'third', status: 'running', step: 0 });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(app.state.runId, 'next');
  await h.close();
});

test('a run warning (policy collapse) from the history and live points shows once in a banner; another run clears it', async () => {
  const warning = {
    code: 'policy_collapse' as const,
    step: 11,
    stage: 'main',
    message: 'policy collapse in stage main at step 11: KL to the reference 1.82 nats/token',
    values: { ref_kl: 1.82 },
  };
  const h = host<DashboardRequests>({
    status: (p: { runId: string }) => ({ id: p.runId, status: 'running', step: 12 }),
    metrics: (p: { runId: string }) =>
      p.runId === 'r1' ? [{ runId: 'r1', step: 11, at: 0, values: { kl: 1.82 }, warnings: [warning] }] : [],
  });
  const app = mountDashboard(h.root, h.ipc as never, { runId: 'r1' });
  await app.firstPaint;
  const banner = h.document.querySelector('.warnings') as HTMLElement;
  await until(() => !banner.hidden, 'banner shown');
  assert.equal(banner.textContent, `Step 11: ${warning.message}`);
  h.notify('metrics', { runId: 'r1', step: 11, at: 0, values: {}, warnings: [warning] });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(banner.querySelectorAll('.warning').length, 1, 'the same warning again is not repeated');
  await app.show('r2');
  assert.equal(banner.hidden, true);
  assert.equal(banner.querySelectorAll('.warning').length, 0);
  await h.close();
});

test('a failed run shows its reason; charts say "not recorded" instead of waiting forever', async () => {
  const h = host<DashboardRequests>({
    status: () => ({
      id: 'r1',
      status: 'failed',
      step: 12,
      statusReason: 'sequence of 120 tokens exceeds the model maxSeqLen 96',
    }),
    metrics: () => [{ runId: 'r1', step: 0, at: 0, values: { reward: 0.2 } }],
  });
  const app = mountDashboard(h.root, h.ipc as never, { runId: 'r1' });
  await app.firstPaint;
  const reason = h.document.querySelector('.reason') as HTMLElement;
  assert.equal(reason.hidden, false);
  assert.equal(reason.textContent, 'Failed: sequence of 120 tokens exceeds the model maxSeqLen 96');
  assert.ok(!h.document.getElementById('resume')!.hasAttribute('disabled'), 'a failed run can be resumed');
  const entropy = app.charts.find((c) => c.keys.includes('entropy'))!;
  assert.equal(entropy.emptyText, 'not recorded by this algorithm');
  const fresh = mountDashboard(h.document.createElement('div'), h.ipc as never, undefined);
  assert.equal(fresh.charts[0]!.emptyText, 'waiting for data…');
  await h.close();
});

test("the run's tensor and rollout engines from its status; a notification (which has none) keeps them; another run clears them", async () => {
  const engines: Record<string, unknown> = {
    r1: { tensor: 'webgpu: nvidia hopper (NVIDIA H200)', rollout: 'llama.cpp cuda: NVIDIA H200' },
    r2: undefined,
  };
  const h = host<DashboardRequests>({
    status: (p: { runId: string }) => ({ id: p.runId, status: 'running', step: 1, engines: engines[p.runId] }),
    metrics: () => [],
  });
  const app = mountDashboard(h.root, h.ipc as never, { runId: 'r1' });
  await app.firstPaint;
  const box = h.document.querySelector('.engines') as HTMLElement;
  assert.equal(box.hidden, false);
  assert.equal(
    h.document.querySelector('.engine-tensor')!.textContent,
    'Tensor engine webgpu: nvidia hopper (NVIDIA H200)',
  );
  assert.equal(h.document.querySelector('.engine-rollout')!.textContent, 'Rollouts llama.cpp cuda: NVIDIA H200');
  h.notify('status', { id: 'r1', status: 'running', step: 2 });
  await until(() => h.document.querySelector('.status')!.textContent === 'running · step 2', 'status notification');
  assert.match(box.textContent!, /NVIDIA H200/, 'kept');
  // A run that has recorded no engine yet shows none, not the last run's.
  h.notify('select', { runId: 'r2' });
  await until(() => h.document.querySelector('h2')!.textContent === 'r2', 'r2 shown');
  assert.equal(box.hidden, true);
  assert.equal(box.textContent, '');
  await h.close();
});

test('charts: a single point is placed inside the plot, legends with latest values, readable ticks, hover values, log ticks', async () => {
  const { formatTick, logTicks, nearestIndex } = await import('../../webview/dashboard/chart.js');
  const one = extent([{ key: 'a', xs: [40], ys: [0.5] }])!;
  assert.ok(one.x0 < 40 && one.x1 > 40, 'one eval point is centred, not on the edge');
  assert.deepEqual(
    [formatTick(2000), formatTick(1_500_000), formatTick(0.25), formatTick(0.0003), formatTick(0)],
    ['2k', '1.5M', '0.25', '3e-4', '0'],
  );
  assert.deepEqual(logTicks(0.002, 3), [0.01, 0.1, 1]);
  assert.equal(nearestIndex([0, 10, 20], 14), 1);
  assert.equal(nearestIndex([0, 10, 20], 16), 2);
  const h = host<DashboardRequests>({
    status: () => ({ id: 'r1', status: 'running' }),
    metrics: () => [
      { runId: 'r1', step: 0, at: 0, values: { 'loss/total': 2, 'loss/policy': 0.5 } },
      { runId: 'r1', step: 10, at: 0, values: { 'loss/total': 1.5, 'loss/policy': 0.25, 'loss/sft': 1.25 } },
    ],
  });
  const app = mountDashboard(h.root, h.ipc as never, { runId: 'r1' });
  await app.firstPaint;
  const losses = app.charts.find((c) => c.keys.includes('loss/total'))!;
  await until(() => /total 1\.5/.test(losses.legend.textContent ?? ''), 'legend with latest values');
  assert.deepEqual(
    Array.from(losses.legend.querySelectorAll('.legend-item')).map((i) => i.textContent),
    ['total 1.5', 'policy 0.25', 'SFT 1.25', 'critic (value)'],
  ); // no critic in this run: its key, no value
  // Hover at the right edge of the plot reads step 10.
  const text = losses.hoverAt(290);
  assert.equal(text, 'step 10 · total 1.5 · policy 0.25 · SFT 1.25');
  assert.equal(losses.hover.textContent, text);
  assert.ok(h.document.querySelector('figure[data-title="Losses"] .log-toggle'), 'losses offer a log scale');
  // A legend entry switches its series off: gone from the hover read-out, the y range follows.
  const policy = Array.from(losses.legend.querySelectorAll('.legend-item')).find((i) =>
    /policy/.test(i.textContent ?? ''),
  )!;
  assert.equal(policy.getAttribute('role'), 'button');
  policy.dispatchEvent(new (h.window as unknown as typeof globalThis).Event('click'));
  assert.ok(losses.hidden.has('loss/policy'));
  assert.equal(losses.hoverAt(290), 'step 10 · total 1.5 · SFT 1.25');
  assert.equal(extent([...losses.series.values()].filter((s) => !losses.hidden.has(s.key)))!.y0, 1.25);
  await until(() => losses.legend.querySelector('[aria-pressed="false"]'), 'legend shows it off');
  // Zoom to steps 5..10: the axis spans them; the hover finds step 10 at the right edge.
  losses.zoomTo(5, 10);
  assert.deepEqual({ x0: losses.view!.x0, x1: losses.view!.x1 }, { x0: 5, x1: 10 });
  assert.equal(losses.stepAt(48), 5);
  assert.equal(extent([...losses.series.values()], false, losses.view)!.y1, 1.5, 'step 0 (loss 2) is out of view');
  losses.zoomTo(undefined);
  assert.equal(losses.view, undefined);
  // Single-series charts have a plain legend (nothing to toggle).
  assert.equal(app.charts.find((c) => c.keys.includes('reward'))!.legend.querySelector('[role="button"]'), null);
  await h.close();
});

test('a chart without data of its own redraws to say "not recorded" once the run has points', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const h = host<DashboardRequests>({
    status: () => ({ id: 'r1', status: 'running' }),
    metrics: async () => (await gate, [{ runId: 'r1', step: 0, at: 0, values: { reward: 0.2 } }]),
  });
  const app = mountDashboard(h.root, h.ipc as never, { runId: 'r1' });
  const kl = app.charts.find((c) => c.keys.includes('kl'))!;
  await until(() => h.requests.some((r) => r.method === 'metrics'), 'history requested');
  await new Promise((r) => setTimeout(r, 50));
  let drawn = 0;
  kl.draw = () => (drawn++, true);
  release();
  await app.firstPaint;
  await until(() => drawn > 0, 'KL redrawn');
  assert.equal(kl.emptyText, 'not recorded: no KL term');
  await h.close();
});

test('Losses: the total is drawn dashed and last, so it shows where it equals the policy loss (issue 28)', async () => {
  const { drawOrder } = await import('../../webview/dashboard/chart.js');
  assert.deepEqual(drawOrder(['loss/total', 'loss/policy', 'loss/sft'], ['loss/total']), [1, 2, 0]);
  assert.deepEqual(drawOrder(['a', 'b']), [0, 1]);
  const h = host<DashboardRequests>({
    status: () => ({ id: 'r1', status: 'running' }),
    metrics: () => [{ runId: 'r1', step: 0, at: 0, values: { 'loss/total': 0.44, 'loss/policy': 0.44 } }],
  });
  const app = mountDashboard(h.root, h.ipc as never, { runId: 'r1' });
  await app.firstPaint;
  const losses = app.charts.find((c) => c.keys.includes('loss/total'))!;
  await until(() => /total 0\.44/.test(losses.legend.textContent ?? ''), 'legend');
  const swatches = Array.from(losses.legend.querySelectorAll('.swatch')).map((s) => s.classList.contains('dashed'));
  assert.deepEqual(swatches, [true, false, false, false], 'the legend shows the total dashed too');
  await h.close();
});

test('Pause and Stop say pausing… / stopping… until the run leaves running (issue 28 finding 8)', async () => {
  const calls: string[] = [];
  let release!: () => void;
  const h = host<DashboardRequests>({
    runs: () => [],
    status: () => ({ id: 'r1', status: 'running', step: 3 }),
    metrics: () => [],
    evaluate: () => ({ accuracy: 0, tasks: 0 }),
    // The host answers when the run has ended its step (seconds later).
    pause: () => (calls.push('pause'), new Promise((r) => (release = () => r(null)))) as never,
    stop: () => (calls.push('stop'), null),
    resume: () => null,
  });
  const app = mountDashboard(h.root, h.ipc as never, undefined);
  h.notify('select', { runId: 'r1' });
  await app.firstPaint;
  await until(() => h.document.querySelector('.status')!.textContent === 'running · step 3', 'status');
  const pause = h.document.getElementById('pause')!;
  assert.ok(!pause.hasAttribute('disabled'));
  pause.dispatchEvent(new (h.window as unknown as typeof globalThis).Event('click'));
  await until(() => calls.includes('pause'), 'pause requested');
  assert.equal(h.document.querySelector('.status')!.textContent, 'pausing… · step 3');
  assert.ok(
    h.document.getElementById('stop')!.hasAttribute('disabled') && pause.hasAttribute('disabled'),
    'no second click meanwhile',
  );
  // A live status of the still-running run keeps it; the paused status ends it.
  h.notify('status', { id: 'r1', status: 'running', step: 4 });
  await until(() => h.document.querySelector('.status')!.textContent === 'pausing… · step 4', 'still pausing');
  h.notify('status', { id: 'r1', status: 'paused', step: 4 });
  release();
  await until(() => h.document.querySelector('.status')!.textContent === 'paused · step 4', 'paused');
  assert.ok(!h.document.getElementById('resume')!.hasAttribute('disabled'));
  // (The dashboard's refresh interval lives on its window: closed, or the test process never exits.)
  await h.close();
});

test('the header counts trainer steps done: the final eval at step 50 or an explore step ahead add none (not "step 51")', async () => {
  const h = host<DashboardRequests>({
    runs: () => [],
    status: () => ({ id: 'r1', status: 'running', step: 48, totalSteps: 50 }),
    metrics: () => [{ runId: 'r1', step: 47, at: 0, values: { reward: 0.2 }, trained: 48 }],
  });
  const app = mountDashboard(h.root, h.ipc as never, undefined);
  h.notify('select', { runId: 'r1' });
  await app.firstPaint;
  const status = () => h.document.querySelector('.status')!.textContent;
  await until(() => status() === 'running · step 48/50', 'the status answer');
  // The explorer runs a step ahead of the trainer: its point is no step done.
  h.notify('metrics', { runId: 'r1', step: 49, at: 0, values: { reward: 0.3 } });
  h.notify('metrics', { runId: 'r1', step: 48, at: 0, values: { 'loss/total': 1 }, trained: 49 });
  await until(() => status() === 'running · step 49/50', 'train point counted');
  h.notify('metrics', { runId: 'r1', step: 49, at: 0, values: { 'loss/total': 1 }, trained: 50 });
  // The final eval is recorded at the version it evaluated (50).
  h.notify('metrics', { runId: 'r1', step: 50, at: 0, values: { eval_accuracy: 0.5 } });
  const acc = app.charts.find((c) => c.keys.includes('eval_accuracy'))!;
  await until(() => acc.series.get('eval_accuracy')?.ys.length === 1, 'eval drawn');
  assert.equal(status(), 'running · step 50/50');
  await h.close();
});
