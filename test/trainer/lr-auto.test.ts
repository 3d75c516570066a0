// Issue 41 items 1 and 4, the parts without a run: `trainer.lr: auto` in the config (a positive number
// or auto, also a stage's; `trainer.lr_auto` read only where some stage's lr is auto), the defaults
// (auto from model.checkpoint, full and LoRA; a fixed 1e-3 from scratch; a fixed lr and a stage's lr
// win), the controller (lr down when the update KL is above its band, up when below, bounded), the
// update-KL estimate, the count of zero-variance groups and the stall guard on train records.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateRunConfig } from '../../backend/core/config.js';
import { resolveTrainerSettings } from '../../backend/core/trainer-defaults.js';
import { AdaptiveLr, batchTeaches, updateKl } from '../../backend/trainer/adaptive-lr.js';
import { groupSpread } from '../../backend/trainer/group-spread.js';
import { STALL_STEPS, StallGuard } from '../../backend/trainer/stall-guard.js';
import type { Experience } from '../../backend/core/types.js';
import { readCheckpointMeta } from '../../backend/model/checkpoint-meta.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const validate = (extra: Record<string, unknown>) =>
  validateRunConfig({ taskset: { builtin: 'reverse' }, workflow: {}, ...extra });
const cfg = (extra: Record<string, unknown>) => validate(extra).config!;

test('config: trainer.lr and a stage lr take a positive number or auto; anything else is refused by path', () => {
  assert.equal(cfg({ trainer: { lr: 'auto' } }).trainer.lr, 'auto');
  assert.equal(cfg({ trainer: { lr: 2e-5 } }).trainer.lr, 2e-5);
  const stages = [{ name: 's', algorithm: { name: 'grpo' }, steps: 3, lr: 'auto' }];
  assert.equal(cfg({ model: { size: 'tiny-0.4m' }, stages }).stages![0]!.lr, 'auto');
  for (const bad of ['fast', -1, 0]) {
    const v = validate({ trainer: { lr: bad } });
    assert.equal(v.config, undefined);
    assert.ok(
      v.issues.some((i) => i.path === 'trainer.lr' && /positive number or 'auto'/.test(i.message)),
      JSON.stringify(v.issues),
    );
  }
});

test('config: trainer.lr_auto is read only where a stage trains with lr auto; min above max is refused', () => {
  const auto = { target_kl: 2e-3, start: 1e-5, min: 1e-7, max: 1e-3 };
  assert.deepEqual(validate({ trainer: { lr: 'auto', lr_auto: auto } }).issues, []);
  // From a checkpoint with no lr, the default is auto: read.
  assert.deepEqual(validate({ model: { checkpoint: 'm' }, trainer: { lr_auto: auto } }).issues, []);
  const fixed = validate({ model: { checkpoint: 'm' }, trainer: { lr: 1e-5, lr_auto: auto } });
  assert.ok(fixed.issues.some((i) => i.path === 'trainer.lr_auto' && /read only where/.test(i.message)));
  const scratch = validate({ trainer: { lr_auto: auto } });
  assert.ok(
    scratch.issues.some((i) => i.path === 'trainer.lr_auto'),
    'from scratch the default lr is fixed',
  );
  const bounds = validate({ trainer: { lr: 'auto', lr_auto: { min: 1e-3, max: 1e-4 } } });
  assert.ok(
    bounds.issues.some((i) => i.path === 'trainer.lr_auto.min'),
    JSON.stringify(bounds.issues),
  );
  const unknown = validate({ trainer: { lr: 'auto', lr_auto: { target: 1 } } });
  assert.ok(
    unknown.issues.some((i) => i.path.startsWith('trainer.lr_auto')),
    JSON.stringify(unknown.issues),
  );
});

test('defaults: auto from a checkpoint (full 1e-6 start, LoRA 1e-5), fixed 1e-3 from scratch; a fixed lr and a stage lr win; lr_auto is read', () => {
  const scratch = resolveTrainerSettings(cfg({}));
  assert.deepEqual([scratch.kind, scratch.lr, scratch.auto, scratch.warmup_steps], ['scratch', 1e-3, undefined, 0]);
  const full = resolveTrainerSettings(cfg({ model: { checkpoint: 'm' } }));
  assert.deepEqual([full.kind, full.lr, full.warmup_steps, full.grad_clip], ['pretrained-full', 1e-6, 0, 1]);
  assert.deepEqual(full.auto, { targetKl: 1e-2, start: 1e-6, min: 1e-8, max: 1e-2 });
  assert.equal(
    full.line,
    'lr auto (start 1e-6, kept where the update KL per token is near 0.01, between 1e-8 and 0.01), warm-up 0 step(s), grad clip 1 (pretrained checkpoint, full fine-tuning: defaults for lr, warm-up, grad clip)',
  );
  const lora = resolveTrainerSettings(cfg({ model: { checkpoint: 'm', lora: { rank: 8 } } }));
  assert.deepEqual([lora.kind, lora.auto?.start, lora.auto?.max], ['pretrained-lora', 1e-5, 5e-3]);
  const set = resolveTrainerSettings(cfg({ model: { checkpoint: 'm' }, trainer: { lr: 3e-6 } }));
  assert.deepEqual([set.lr, set.auto, set.warmup_steps], [3e-6, undefined, 5], 'a fixed lr keeps its warm-up');
  assert.match(set.line, /^lr 3e-6, warm-up 5 step\(s\), grad clip 1 \(pretrained checkpoint, full fine-tuning/);
  assert.equal(resolveTrainerSettings(cfg({ model: { checkpoint: 'm' } }), 0.5).lr, 0.5, "a stage's own lr wins");
  assert.equal(resolveTrainerSettings(cfg({}), 'auto').auto?.start, 1e-4, 'auto from scratch, by a stage');
  const tuned = resolveTrainerSettings(
    cfg({ trainer: { lr: 'auto', lr_auto: { target_kl: 5e-4, min: 1e-3, max: 2e-3 } } }),
  );
  assert.deepEqual(tuned.auto, { targetKl: 5e-4, start: 1e-3, min: 1e-3, max: 2e-3 }, 'the start is within bounds');
});

test('controller: the lr falls when the update KL is above its band, rises when below, stays inside it, bounded', () => {
  const c = new AdaptiveLr({ targetKl: 1e-3, start: 1e-5, min: 1e-6, max: 1e-4 });
  assert.equal(c.lr, 1e-5);
  c.observe(1e-3);
  assert.equal(c.lr, 1e-5, 'in the band: unchanged');
  c.observe(3e-3);
  assert.ok(Math.abs(c.lr - 1e-5 / 1.5) < 1e-12, 'above 2x target: /1.5');
  c.observe(1e-2);
  assert.ok(Math.abs(c.lr - 1e-5 / 1.5 / 3) < 1e-12, 'above 8x target: /3');
  for (let i = 0; i < 20; i++) c.observe(1);
  assert.equal(c.lr, 1e-6, 'bounded below');
  c.observe(4e-4);
  assert.ok(Math.abs(c.lr - 1.5e-6) < 1e-15, 'below target/2 after the ramp: x1.5');
  for (let i = 0; i < 30; i++) c.observe(1e-7);
  assert.equal(c.lr, 1e-4, 'bounded above');
  const before = c.lr;
  c.observe(Number.NaN);
  assert.equal(c.lr, before, 'nothing measured: unchanged');
  // While ramping from its start (the KL never yet in the band) the lr goes straight to where the
  // KL (~ lr^2) would reach the target, at most x10 a step.
  const r = new AdaptiveLr({ targetKl: 1e-3, start: 1e-6, min: 1e-8, max: 1e-2 });
  r.observe(1e-9);
  assert.ok(Math.abs(r.lr - 1e-5) < 1e-15, 'ramp: at most x10');
  r.observe(1e-4);
  assert.ok(Math.abs(r.lr - 1e-5 * Math.sqrt(10)) < 1e-15, 'ramp: x sqrt(target / KL)');
  r.observe(1e-3);
  r.observe(1e-4);
  assert.ok(Math.abs(r.lr - 1e-5 * Math.sqrt(10) * 1.5) < 1e-15, 'after the band was reached: x1.5 only');
  // A target shaped by a warm-up (a smaller target this step).
  const w = new AdaptiveLr({ targetKl: 1e-3, start: 1e-5, min: 1e-8, max: 1e-2 });
  w.observe(1e-3, 1e-4);
  assert.ok(w.lr < 1e-5, "above this step's band");
  const s = new AdaptiveLr({ targetKl: 1e-3, start: 1e-6, min: 1e-8, max: 1e-2 });
  s.restore(c.state());
  assert.equal(s.lr, 1e-4, 'state restored');
});

test('a batch that teaches nothing (every advantage zero) is no reading for the lr; expert rows and critic rows always are', () => {
  const flat = [
    { source: 'usual', advantages: [0, 0] },
    { source: 'usual', advantages: [0] },
  ];
  assert.equal(batchTeaches(flat), false);
  assert.equal(batchTeaches([...flat, { source: 'usual', advantages: [0, 0.5] }]), true);
  assert.equal(batchTeaches([...flat, { source: 'expert' }]), true);
  assert.equal(batchTeaches([{ source: 'usual' }]), true, 'advantages computed in the trainer (a critic)');
  // What the trainer then does with no reading: the lr stays, even while ramping.
  const c = new AdaptiveLr({ targetKl: 1e-2, start: 1e-6, min: 1e-8, max: 1e-2 });
  for (let i = 0; i < 4; i++) c.observe(Number.NaN);
  assert.equal(c.lr, 1e-6);
});

test('update KL: k3 per trained token, zero for no change, never negative, masked tokens left out', () => {
  assert.deepEqual(updateKl([[-1, -2]], [[-1, -2]], [[1, 1]]), { kl: 0, tokens: 2 });
  const r = 0.1;
  const { kl, tokens } = updateKl([[-1, -2, -3]], [[-1 + r, -2 - r, 0]], [[1, 1, 0]]);
  assert.equal(tokens, 2);
  assert.ok(Math.abs(kl - (Math.exp(r) - 1 - r + Math.exp(-r) - 1 + r) / 2) < 1e-12);
  assert.ok(Number.isNaN(updateKl([[-1]], [[-1]], [[0]]).kl), 'no trained token: nothing measured');
});

const row = (groupId: string, reward: number, status: Experience['status'] = 'ok') =>
  ({ groupId, reward, status }) as Experience;

test('zero-variance groups: groups of two or more ok rollouts whose rewards all agree, counted and shared', () => {
  const rows = [row('a', 1), row('a', 1), row('b', 0), row('b', 1), row('c', 0), row('c', 0), row('d', 1)];
  assert.deepEqual(groupSpread(rows), { zero_variance_groups: 2, zero_variance_share: 2 / 3 });
  assert.deepEqual(groupSpread([row('a', 1)]), {}, 'no group of two');
  assert.deepEqual(groupSpread([row('a', 1), row('a', 0, 'invalid')]), {}, 'only ok rollouts count');
});

const rec = (step: number, batch_reward: number, update_kl: number, share = 0.5) => ({
  kind: 'train',
  stage: 'main',
  step,
  batch_reward,
  update_kl,
  zero_variance_share: share,
  lr: 1e-4,
});
const feed = (g: StallGuard, rows: ReturnType<typeof rec>[]) => rows.map((r) => g.observe(r)).filter((w) => w);

test('stall guard: a flat reward while the update KL keeps moving is said once, with the zero-variance share', () => {
  const n = STALL_STEPS + 10;
  const ws = feed(
    new StallGuard('main'),
    Array.from({ length: n }, (_, i) => rec(i, 0.2 + 0.02 * Math.sin(i), 1e-3, 0.6)),
  );
  assert.equal(ws.length, 1, 'once');
  const w = ws[0]!;
  assert.equal(w.code, 'run_stalled');
  assert.equal(w.step, STALL_STEPS - 1, 'as soon as it has seen enough steps');
  assert.match(w.message, /run not learning in stage main/);
  assert.match(w.message, /60% of the rollout groups had rewards all equal/);
  assert.match(w.message, /Try: a smaller trainer\.lr, or lr: auto; .*explorer\.repeat_times.*partial credit/);
  assert.ok(Math.abs(w.values.zero_variance_share! - 0.6) < 1e-9);
  // A resumed stage that said it already does not say it again.
  const auto = feed(
    new StallGuard('main', [], true),
    Array.from({ length: n }, (_, i) => rec(i, 0.2, 1e-3)),
  );
  assert.match(auto[0]!.message, /Try: a smaller trainer\.lr_auto\.target_kl/, 'with lr auto: its target');
  const again = new StallGuard('main', [{ kind: 'warning', code: 'run_stalled', stage: 'main', step: 3 }]);
  assert.deepEqual(
    feed(
      again,
      Array.from({ length: n }, (_, i) => rec(i, 0.2, 1e-3)),
    ),
    [],
  );
});

test('stall guard: quiet on a learning run, on a reward already near the top, and while the policy does not move', () => {
  const n = STALL_STEPS + 10;
  const rising = Array.from({ length: n }, (_, i) => rec(i, 0.2 + (0.6 * i) / n, 1e-3));
  assert.deepEqual(feed(new StallGuard('main'), rising), []);
  assert.deepEqual(
    feed(
      new StallGuard('main'),
      Array.from({ length: n }, (_, i) => rec(i, 0.97, 1e-3)),
    ),
    [],
  );
  assert.deepEqual(
    feed(
      new StallGuard('main'),
      Array.from({ length: n }, (_, i) => rec(i, 0.2, 1e-9)),
    ),
    [],
  );
});

test("a checkpoint's lr_auto state: read back; one that is not a positive lr is refused by file and field", () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-lr-auto-meta-'));
  try {
    writeFileSync(join(dir, 'rft.json'), JSON.stringify({ version: 3, lr_auto: { lr: 2e-4, ramping: false } }));
    assert.deepEqual(readCheckpointMeta(dir).lr_auto, { lr: 2e-4, ramping: false });
    writeFileSync(join(dir, 'rft.json'), JSON.stringify({ version: 3, lr_auto: { lr: -1 } }));
    assert.throws(() => readCheckpointMeta(dir), /rft\.json.*lr_auto\.lr.*expected a positive learning rate, got -1/s);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
