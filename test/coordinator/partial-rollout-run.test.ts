// Partial rollouts in whole runs, on a long-output task (an untrained model answers up to
// max_new_tokens): in the memory and checkpoint placements no trajectory gets more than the per-step
// budget in one explore step, long trajectories finish over several steps and are trained on, and
// no partial row is ever in a trained batch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import { BUDGET, MAX_NEW, STEPS, partialConfig } from './partial-config.js';
import { checkRunConfig } from '../../backend/coordinator/config-check.js';
import { checkDistributedConfig } from '../../backend/coordinator/distributed/setup.js';
import { tempWorkspace } from './tiny-config.js';

function records(runDir: string): Record<string, unknown>[] {
  const f = join(runDir, 'metrics.jsonl');
  return existsSync(f)
    ? readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];
}

for (const method of ['memory', 'checkpoint'] as const) {
  test(`${method}: tokens per trajectory per explore step stay within the budget; multi-step trajectories are trained, partial rows never`, async () => {
    const ws = tempWorkspace();
    try {
      const s = await runJob({ config: partialConfig(method), workspace: ws, runId: 'p' });
      assert.equal(s.trainer_steps, STEPS);
      const runDir = join(ws, '.rft', 'runs', 'p');
      const rec = records(runDir);
      const explore = rec.filter((r) => r.kind === 'explore');
      assert.ok(explore.length >= STEPS);
      for (const r of explore) {
        assert.ok(
          Number(r.max_trajectory_tokens) <= BUDGET,
          `explore step ${r.step}: ${r.max_trajectory_tokens} tokens in one trajectory`,
        );
        // Rounds of one step (checkpoint: a step re-explored until full) are summed in one record.
        assert.ok(
          Number(r.tokens) <= BUDGET * (Number(r.experiences) + Number(r.partial_continued) + 4 * 8),
          `explore step ${r.step}: ${r.tokens} tokens`,
        );
      }
      assert.ok(
        explore.some((r) => Number(r.partial_continued) > 0),
        'trajectories were continued',
      );
      // loss_segments fresh: the trainer loop reports the masked tokens of each step.
      const train = rec.filter((r) => r.kind === 'train');
      assert.equal(train.length, STEPS);
      for (const r of train) assert.equal(typeof r.stale_segment_tokens, 'number');
      const store = await openStore(join(runDir, 'buffer.db'));
      try {
        let multi = 0;
        let acrossVersions = 0;
        for (let t = 0; t < STEPS; t++) {
          const exps = await store.getMany(await store.consumed('trainer', t, 'p'));
          assert.ok(exps.length > 0);
          for (const e of exps) {
            assert.equal(e.status, 'ok', `step ${t}: ${e.id} is ${e.status}`);
            assert.equal(e.metadata?.partial, undefined);
            assert.equal(e.segments!.at(-1)!.end, e.responseTokens.length);
            if (e.segments!.length > 1) multi++;
            // Segments follow one another, each sampled by weights no older than the one before.
            e.segments!.forEach((g, k) => {
              if (k === 0) return;
              assert.equal(g.start, e.segments![k - 1]!.end, `${e.id}: segment ${k} starts where ${k - 1} ended`);
              assert.ok(g.version >= e.segments![k - 1]!.version, `${e.id}: segment ${k} from older weights`);
            });
            if (new Set(e.segments!.map((g) => g.version)).size > 1) acrossVersions++;
          }
        }
        assert.ok(multi > 0, 'trajectories that spanned more than one explore step were trained on');
        assert.ok(acrossVersions > 0, 'trajectories continued under newer weights were trained on');
        // What is left unfinished stays in the buffer as partial rows of the run (never taken).
        for (const e of await store.list({ runId: 'p', status: 'partial', limit: 1000 })) assert.equal(e.useCount, 0);
      } finally {
        await store.close();
      }
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
}

test('explorer.partial_rollout is refused where it cannot be read, at its path', () => {
  const at = (cfg: RunConfig) =>
    checkRunConfig(cfg)
      .filter((i) => i.path.startsWith('explorer.partial_rollout'))
      .map((i) => i.path);
  assert.deepEqual(at(partialConfig('memory')), []);
  assert.deepEqual(at(partialConfig('memory', { workflow: { name: 'multi_turn', reward: 'environment' } })), [
    'explorer.partial_rollout',
  ]);
  const big = partialConfig('memory');
  big.explorer.partial_rollout!.max_tokens_per_step = MAX_NEW;
  assert.deepEqual(at(big), ['explorer.partial_rollout.max_tokens_per_step']);
  // Distributed: runs (test/coordinator/partial-distributed.test.ts); what no placement continues is refused there too, at its path.
  assert.equal(checkDistributedConfig(partialConfig('checkpoint')), null);
  assert.match(
    checkDistributedConfig(partialConfig('checkpoint', { workflow: { name: 'multi_turn', reward: 'environment' } })) ??
      '',
    /^explorer\.partial_rollout: continues single_turn samples only/,
  );
  const bigDist = partialConfig('checkpoint');
  bigDist.explorer.partial_rollout!.max_tokens_per_step = MAX_NEW;
  assert.match(checkDistributedConfig(bigDist) ?? '', /^explorer\.partial_rollout\.max_tokens_per_step: /);
  // Modes that make no training rollouts do not read it (reported, as every unread field is).
  const unread = (mode: string) =>
    validateRunConfig({
      mode,
      taskset: { builtin: 'reverse' },
      workflow: {},
      explorer: { partial_rollout: { max_tokens_per_step: 4 } },
    }).issues.map((i) => i.path);
  assert.ok(unread('train').includes('explorer.partial_rollout'));
  assert.ok(unread('bench').includes('explorer.partial_rollout'));
  assert.ok(!unread('both').includes('explorer.partial_rollout'));
  const { config, issues } = validateRunConfig({ explorer: { partial_rollout: { max_tokens_per_step: 0 } } });
  assert.equal(config, undefined);
  assert.ok(issues.some((i) => i.path === 'explorer.partial_rollout.max_tokens_per_step'));
});
