// A custom reward returning NaN or -Infinity (issue 40, item 24) was reported as "returned null"
// (JSON's spelling of both): the user looked for a null that their code never returned. The value is
// now named as returned; it is still an infrastructure failure, never a reward.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCustomFile } from '../../backend/explorer/custom.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-custom-nonfinite-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const task = { id: 't', taskset: 'x', domain: 'text' as const, prompt: 'p', answer: 'yes' };

test('NaN, -Infinity and { reward: NaN } are named in the failure, not as null', async () => {
  const f = join(dir, 'nonfinite.mjs');
  writeFileSync(
    f,
    `export default (rft) => {
      rft.register('reward', 'nan_rw', () => NaN);
      rft.register('reward', 'neg_inf_rw', () => -Infinity);
      rft.register('reward', 'obj_nan_rw', () => ({ reward: NaN }));
    }`,
  );
  await loadCustomFile(f);
  for (const [name, shown] of [
    ['nan_rw', 'NaN'],
    ['neg_inf_rw', '-Infinity'],
    ['obj_nan_rw', '{"reward":NaN}'],
  ] as const) {
    const r = await rewardFns.get(name)(task, 'x');
    assert.equal(r.status, 'infra_failure');
    assert.equal(r.reward, 0);
    assert.equal(
      r.reason,
      `custom reward '${name}' (${f}) returned ${shown}; expected a finite number or { reward: number }`,
    );
  }
});
