// Issue 41 items 1-2, the CI slice of `npm run bench -- lr-auto`: the smallest model of the pretrained
// spread (tools/pretrained-spread: Llama layout, hidden 64, char tokenizer, last letter with a
// first-letter bias), imported from its Hugging Face folder with model.checkpoint and trained with
// GRPO through config -> runJob. With `lr: auto` held-out greedy accuracy rises and the guard stays
// quiet; a fixed lr far too high for it does worse in the same steps (it collapses, or gains less).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { spreadModel } from '../../tools/pretrained-spread/index.js';
import { grpoRun, type GrpoRunResult } from '../../tools/pretrained-spread/grpo-run.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-lr-auto-spread-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const model = await spreadModel('last-h64', join(root, 'cache'));
const sizes = { steps: 30, tasksPerStep: 8, repeat: 8 };
let auto: GrpoRunResult | undefined;

test('lr auto: held-out accuracy rises, no collapse, the lr rose from its small start', async (t) => {
  auto = await grpoRun(model, root, 'auto', { ...sizes, lr: 'auto' });
  t.diagnostic(
    `auto: ${auto.base} -> ${auto.final}; lr ${auto.lrs[0]} -> ${auto.lrs.at(-1)}; max ref KL ${auto.maxRefKl}`,
  );
  assert.equal(auto.steps, sizes.steps);
  assert.ok(auto.final >= auto.base + 0.1, `held-out ${auto.base} -> ${auto.final}`);
  assert.deepEqual(auto.warnings, []);
  assert.ok(Math.max(...auto.lrs) > 10 * auto.lrs[0]!, `lr path ${auto.lrs.join(' ')}`);
});

test('a fixed lr far too high (0.03, full fine-tuning) collapses or gains less than lr auto', async (t) => {
  assert.ok(auto, 'the lr auto run ran');
  // Stopped once its guard warns: a collapsed policy can make no trainable sample, and the explorer
  // then refills its step for ever (the cap is a last resort, not part of the property).
  const high = await grpoRun(model, root, 'too-high', {
    ...sizes,
    lr: 0.03,
    stopOnCollapse: true,
    capSeconds: 600,
  });
  t.diagnostic(`lr 0.03: ${high.base} -> ${high.final}; warnings ${high.warnings.join(', ')}`);
  assert.ok(
    high.warnings.includes('policy_collapse') || high.gain < auto.gain,
    `lr 0.03 gain ${high.gain} (warnings ${high.warnings.join(', ') || 'none'}), auto gain ${auto.gain}`,
  );
});
