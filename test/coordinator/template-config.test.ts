// The config "Start Training" writes (src/templates.ts configTemplate) validates as written for
// every domain's template taskset, loads that taskset through run setup, and runs: the math one
// (the default when no taskset exists yet) end to end, shortened to 2 steps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { loadTasks } from '../../backend/coordinator/setup/tasks.js';
import { runJob } from '../../backend/coordinator/run.js';
import { configTemplate, domainOf, DOMAINS, tasksetTemplate } from '../../src/templates.js';

function workspace(domain: string): { ws: string; config: string } {
  const ws = mkdtempSync(join(tmpdir(), 'rft-template-'));
  mkdirSync(join(ws, 'tasksets'));
  writeFileSync(join(ws, 'tasksets', `${domain}.jsonl`), tasksetTemplate(domain as never));
  const config = join(ws, 'train.rft.yaml');
  writeFileSync(config, configTemplate(`tasksets/${domain}.jsonl`));
  return { ws, config };
}

for (const { domain } of DOMAINS) {
  test(`the Start Training template validates and loads the ${domain} taskset`, async () => {
    const { ws, config } = workspace(domain);
    try {
      assert.equal(domainOf(`tasksets/${domain}.jsonl`), domain);
      const cfg = loadRunConfig(config);
      assert.equal(cfg.taskset.path, join(ws, 'tasksets', `${domain}.jsonl`));
      const pools = await loadTasks(cfg);
      assert.equal(pools.train.length, tasksetTemplate(domain).trim().split('\n').length);
      // No eval file: a template taskset (under 20 tasks) trains on all and says there is no eval set.
      assert.equal(pools.eval.length, 0);
      assert.match(pools.evalSet, /^none: no eval given/);
      assert.match(readFileSync(config, 'utf8'), /^# No eval set given: a taskset of 20 tasks or more holds out 10%/m);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
}

test('the template runs as written on the user taskset (default process model, relative paths; math, shortened)', async () => {
  const { ws, config } = workspace('math');
  try {
    const raw = parse(readFileSync(config, 'utf8'));
    raw.trainer.steps = 2;
    raw.explorer.tasks_per_step = 2;
    raw.explorer.repeat_times = 2;
    raw.explorer.sampling.max_new_tokens = 4;
    raw.explorer.eval_sampling.max_new_tokens = 4;
    raw.monitor = { report: false };
    writeFileSync(config, stringify(raw));
    const cfg = loadRunConfig(config);
    assert.equal(cfg.placement, 'checkpoint', 'the template keeps the embedded default');
    const s = await runJob({ config: cfg, configPath: config, workspace: ws, runId: 'tpl' });
    assert.equal(s.trainer_steps, 2);
    // The template's taskset is too small to hold any out: no evaluation, and the summary says why.
    assert.deepEqual([s.evals, s.final_accuracy], [[], null]);
    assert.match(s.eval_set, /^none: /);
    // monitor.report: false writes no report.
    assert.equal(s.report, '');
    assert.ok(!existsSync(join(s.run_dir, 'report.html')));
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
