// Resume from the editor only where it can work (issue 41 item 5), with a real backend and a real
// (tiny) run: a run whose config file was edited since it started asks in a modal whether to resume
// with the new config or the started one (was: the copy taken at the start, silently), and the
// choice reaches `rft resume`; a run refused on its config is not resumed (no request; no inline
// Resume in the Runs view) while its config file is unchanged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { activateWith, deactivateFrom, until, vscode, workspaceDir } from '../../tools/fake-vscode/harness.js';
import { tinyRunConfig } from '../server/tiny-run-config.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import type { MetricsPoint, RunInfo } from '../../backend/core/protocol.js';

const { stopTraining, resumeTraining } = await import('../../src/commands/training.js');

test(
  'Resume asks which config when the file changed, and is not offered for a run refused on its config',
  { timeout: 600_000 },
  async () => {
    vscode.resetFake();
    const ws = workspaceDir({});
    const file = join(ws, 'tiny.rft.yaml');
    writeFileSync(file, tinyRunConfig({ warmupSteps: 2, mixSeconds: 600 }));
    const { ctx, api } = await activateWith(ws);
    const s = api.services!;
    const points: MetricsPoint[] = [];
    const sub = s.client.onNotification('run/metrics', (m) => void points.push(m));
    let id = '';
    try {
      id = (await s.client.request('runs/start', { configPath: file })).id;
      await until(() => points.some((p) => p.runId === id), 'a first step', 240_000);
      await stopTraining(s, id);
      await s.state.refreshRuns();
      const info = () => s.state.runs.find((r) => r.id === id)!;
      assert.equal(info().status, 'stopped');
      assert.equal(info().configChanged, undefined, 'its file is as it started');

      // The file is edited: Resume asks (a modal), and "new config" reaches the backend.
      appendFileSync(file, '# edited after the start\n');
      await s.state.refreshRuns();
      assert.equal(info().configChanged, file);
      vscode.answers.message.push('Resume with New Config');
      const steps = points.filter((p) => p.runId === id).length;
      await resumeTraining(s, id);
      const asked = vscode.recorded.messages.find((m) => m.modal)!;
      assert.match(asked.message, /^Run tiny: tiny\.rft\.yaml changed since the run started\.$/);
      assert.deepEqual(asked.items, ['Resume with New Config', 'Resume with Started Config']);
      await until(() => points.filter((p) => p.runId === id).length > steps, 'a step after the resume', 240_000);
      await s.state.refreshRuns();
      assert.equal(info().status, 'running');
      assert.equal(info().configChanged, undefined, 'the run took the file as it is now');
      await stopTraining(s, id);

      // Recorded as refused on its config (as runJob records an InputError): no Resume anywhere.
      const reg = await RunRegistry.open(ws);
      await reg.setStatus(
        id,
        'failed',
        'trainer.batch_size 24 leaves 16 rows for rollouts … Fix: set trainer.batch_size to 24.',
        'input',
      );
      await s.state.refreshRuns();
      assert.equal(info().resumable, false);
      const tree = vscode.recorded.treeViews.get('rftStudio.runs')!;
      assert.equal(tree.provider.getTreeItem(info()).contextValue, 'rftRun.failed.noresume');
      vscode.recorded.messages.length = 0;
      await resumeTraining(s, id);
      const no = vscode.recorded.messages.find((m) => m.kind === 'error')!;
      assert.match(
        no.message,
        /^Run tiny was not resumed: it was refused on its config or data, .*\. Fix: edit .*tiny\.rft\.yaml, then resume with the new config\.$/,
      );
      await s.state.refreshRuns();
      assert.equal(info().status, 'failed', 'no resume was started');
    } finally {
      sub.dispose();
      const runs: RunInfo[] = await s.client.request('runs/list', {}).catch(() => []);
      for (const r of runs)
        if (r.status === 'running') await s.client.request('runs/stop', { runId: r.id }).catch(() => undefined);
      await deactivateFrom(ctx);
    }
  },
);

test("the Runs view's inline Resume is for paused, stopped and failed runs that can be resumed", async () => {
  const { PACKAGE } = await import('../../tools/fake-vscode/harness.js');
  const menus = (PACKAGE as unknown as { contributes: { menus: Record<string, { command: string; when: string }[]> } })
    .contributes.menus['view/item/context']!;
  const m = menus.find((x) => x.command === 'rftStudio.resumeTraining')!;
  const re = new RegExp(/viewItem =~ \/(.*)\//.exec(m.when)![1]!);
  for (const v of ['rftRun.paused', 'rftRun.stopped', 'rftRun.failed']) assert.match(v, re);
  for (const v of ['rftRun.failed.noresume', 'rftRun.running', 'rftRun.completed']) assert.doesNotMatch(v, re);
});
