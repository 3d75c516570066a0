// Pause and Stop of a real (tiny) run from the editor (issue 28 finding 8): the Runs view says
// `pausing…` / `stopping…` while the run ends its step (was: nothing for 17-19 s), Pause leaves it
// paused and Resume continues it; Open Run Report shows the run's report (finding 7: no command
// opened it), whose wall_seconds covers both segments after the resume (was: the last one only).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { activateWith, deactivateFrom, until, vscode, workspaceDir } from '../../tools/fake-vscode/harness.js';
import { tinyRunConfig } from '../server/tiny-run-config.js';
import type { MetricsPoint, RunInfo } from '../../backend/core/protocol.js';

const { pauseTraining, stopTraining, resumeTraining } = await import('../../src/commands/training.js');
const { openReport } = await import('../../src/commands/report.js');

test(
  'Pause shows pausing… then paused; Resume; Stop shows stopping… then stopped; Open Run Report with wall_seconds over both segments',
  { timeout: 600_000 },
  async () => {
    vscode.resetFake();
    const ws = workspaceDir({});
    writeFileSync(join(ws, 'tiny.rft.yaml'), tinyRunConfig({ warmupSteps: 2, mixSeconds: 600 }));
    const { ctx, api } = await activateWith(ws);
    const s = api.services!;
    const points: MetricsPoint[] = [];
    const sub = s.client.onNotification('run/metrics', (m) => void points.push(m));
    let id = '';
    try {
      id = (await s.client.request('runs/start', { configPath: join(ws, 'tiny.rft.yaml') })).id;
      await until(() => points.some((p) => p.runId === id), 'a first step', 240_000);
      await s.state.refreshRuns();
      const tree = vscode.recorded.treeViews.get('rftStudio.runs')!;
      const description = () => String(tree.provider.getTreeItem(s.state.runs.find((r) => r.id === id)!).description);

      const pausing = pauseTraining(s, id);
      await until(() => description().startsWith('pausing… · running'), 'pausing… in the Runs view');
      await pausing;
      assert.equal(s.state.runs.find((r) => r.id === id)!.status, 'paused');
      assert.match(description(), /^paused/);

      // The report of the first segment, opened from the command.
      const first = await openReport(s, id);
      assert.ok(first, 'a report panel');
      assert.match(first!.webview.html, /Content-Security-Policy/);
      assert.match(first!.webview.html, /<th>wall_seconds<\/th>/);
      assert.doesNotMatch(first!.webview.html, /<th>segments<\/th>/);

      const steps = points.filter((p) => p.runId === id).length;
      await resumeTraining(s, id);
      await until(() => points.filter((p) => p.runId === id).length > steps, 'a step after the resume', 240_000);
      const stopping = stopTraining(s, id);
      await until(() => description().startsWith('stopping… · running'), 'stopping… in the Runs view');
      await stopping;
      assert.equal(s.state.runs.find((r) => r.id === id)!.status, 'stopped');

      const second = (await openReport(s, id))!;
      const cell = (k: string) => Number(new RegExp(`<th>${k}</th><td>([\\d.]+)</td>`).exec(second.webview.html)?.[1]);
      assert.equal(cell('segments'), 2);
      assert.ok(
        cell('wall_seconds') > cell('wall_seconds_last_segment'),
        `${cell('wall_seconds')} s over both segments > ${cell('wall_seconds_last_segment')} s of the last`,
      );
    } finally {
      sub.dispose();
      const runs: RunInfo[] = await s.client.request('runs/list', {}).catch(() => []);
      for (const r of runs)
        if (r.status === 'running') await s.client.request('runs/stop', { runId: r.id }).catch(() => undefined);
      await deactivateFrom(ctx);
    }
  },
);

test('the Runs view offers Pause on a running run, and Evaluate and Open Run Report on every run', async () => {
  const { PACKAGE } = await import('../../tools/fake-vscode/harness.js');
  const menus = (
    PACKAGE as unknown as {
      contributes: { menus: Record<string, { command: string; when: string; group?: string }[]> };
    }
  ).contributes.menus['view/item/context']!;
  const on = (cmd: string) => menus.filter((m) => m.command === cmd && m.when.includes('view == rftStudio.runs'));
  assert.deepEqual(
    on('rftStudio.pauseTraining').map((m) => [m.when, m.group]),
    [['view == rftStudio.runs && viewItem == rftRun.running', 'inline']],
  );
  for (const cmd of ['rftStudio.evaluateCheckpoint', 'rftStudio.openReport']) {
    const m = on(cmd)[0]!;
    for (const status of ['running', 'paused', 'stopped', 'completed', 'failed'])
      assert.match(
        `rftRun.${status}`,
        new RegExp(/viewItem =~ \/(.*)\//.exec(m.when)![1]!),
        `${cmd} on a ${status} run`,
      );
  }
});
