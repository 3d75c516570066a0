// What a stage reads and whether it explores come from one place (coordinator/setup/stage-data.ts):
// the stage loop, the sampler and the config check agree on every built-in algorithm.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stageExplores, stageReads } from '../../backend/coordinator/setup/stage-data.js';
import { samplerConfig } from '../../backend/coordinator/setup/trainer.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { algorithms } from '../../backend/trainer/algorithms/index.js';

const cfg = validateRunConfig({ name: 'x', taskset: { path: 't.jsonl' }, workflow: { reward: 'exact_match' } }).config!;

test('every built-in algorithm: what it reads, whether it explores, and the sampler that serves it agree', () => {
  const seen: Record<string, string> = {};
  for (const name of algorithms.names()) {
    const algorithm = { name, params: {} };
    const reads = stageReads(algorithm);
    seen[name] = reads;
    const type = samplerConfig(name, {}, cfg).type;
    const expected = { pairs: 'pairs', expert: 'expert', mixed: 'mixed', rollouts: 'fifo' }[reads];
    assert.equal(type, expected, `${name}: reads ${reads}, sampler ${type}`);
    assert.equal(
      stageExplores({ mode: 'both', algorithm }),
      reads !== 'expert' && name !== 'sft',
      `${name} in mode both`,
    );
    assert.equal(stageExplores({ mode: 'train', algorithm }), false, `${name} in mode train`);
  }
  assert.equal(seen.sft, 'expert');
  assert.equal(seen.dpo, 'pairs');
  assert.equal(seen.grpo, 'rollouts');
  assert.equal(seen.mix, 'mixed');
  // params.expert_ratio moves a bundle's share: 0 makes MIX read rollouts alone.
  assert.equal(stageReads({ name: 'mix', params: { expert_ratio: 0 } }), 'rollouts');
  assert.equal(stageReads({ name: 'grpo', params: { expert_ratio: 0.25 } }), 'mixed');
  // SFT never explores, whatever its share: below 1 its usual rows are buffer rows (train_from).
  const sftHalf = { name: 'sft', params: { expert_ratio: 0.5 } };
  assert.deepEqual([stageReads(sftHalf), stageExplores({ mode: 'both', algorithm: sftHalf })], ['mixed', false]);
});
