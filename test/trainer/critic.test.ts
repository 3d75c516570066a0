// Issue 25 item 3: PPO's critic is trained and its loss reported (critic_loss in each step's
// metrics), saved in checkpoints (critic/ beside the policy, the policy's files unchanged), continued
// by a resumed run and by the next PPO stage, in the memory, checkpoint and distributed placements.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { CRITIC_DIR, loadCheckpoint, loadCritic, saveCheckpoint } from '../../backend/model/checkpoint.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { OPTIMIZER_FILE } from '../../backend/model/optimizer-state.js';
import { readSafetensors, writeSafetensors } from '../../backend/model/safetensors.js';
import { makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import { LocalRolloutModel } from '../../backend/explorer/local-model.js';
import { singleTurn } from '../../backend/explorer/workflows/single_turn.js';
import { workflowSampling, type RewardFn } from '../../backend/explorer/workflow.js';
import { openStage } from '../../backend/coordinator/run-loop.js';
import { stagesOf } from '../../backend/coordinator/setup/trainer.js';
import { runJob } from '../../backend/coordinator/run.js';
import { setLogSink } from '../../backend/core/log.js';
import type { Experience, Task } from '../../backend/core/types.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import { tinyConfig, tempWorkspace } from '../coordinator/tiny-config.js';

await initEngine();
// The placements' tests read which critic a stage continued from the info log line (the runner sets warn).
process.env.RFT_LOG_LEVEL = 'info';
const tok = CharTokenizer.train(['say ', 'abcd']);
const tasks: Task[] = [...'abcd'].map((c) => ({
  id: c,
  taskset: 't',
  domain: 'text',
  prompt: `say ${c}`,
  answer: 'c',
}));
const reward: RewardFn = async (t, r) => ({ reward: r.trim() === t.answer ? 1 : 0, status: 'ok' });
const mcfg = makeConfig({
  vocabSize: tok.vocabSize,
  dModel: 32,
  nLayers: 1,
  nHeads: 2,
  nKvHeads: 2,
  dFF: 64,
  maxSeqLen: 32,
});

async function rollouts(model: Transformer): Promise<Experience[]> {
  const rm = new LocalRolloutModel(model, tok, 0);
  return singleTurn.run(tasks, {
    model: rm,
    reward,
    runId: 'r',
    repeatTimes: 4,
    sampling: workflowSampling({ maxNewTokens: 3, temperature: 1, topK: 0, topP: 1 }, tok),
    step: 0,
    seed: 5,
    split: 'train',
  });
}

test('critic: value loss reported each step and falling on a fixed batch', async () => {
  const model = new Transformer(mcfg, 7);
  const critic = new Transformer({ ...mcfg, valueHead: true }, 8);
  const objective = makeObjective('ppo');
  const ref = model.clone();
  // The actor does not move (lr 0): the batch and its returns stay fixed, only the critic learns.
  const trainer = new Trainer(model, objective, { lr: 0, criticLr: 1e-2, padId: tok.padId }, ref, critic);
  try {
    const batch = await rollouts(model);
    const losses: number[] = [];
    for (let s = 0; s < 6; s++) {
      const m = await trainer.trainStep(
        batch.map((e) => ({ ...e })),
        s,
      );
      assert.equal(typeof m.critic_loss, 'number', 'critic_loss in the step metrics');
      assert.ok(Number.isFinite(m.critic_loss));
      losses.push(m.critic_loss!);
    }
    assert.ok(losses[0]! > 0, `first value loss ${losses[0]}`);
    assert.ok(losses.at(-1)! < losses[0]! * 0.8, `value loss falls: ${losses.map((x) => x.toFixed(4)).join(' ')}`);
  } finally {
    trainer.dispose();
    model.dispose();
    critic.dispose();
    ref.dispose();
  }
});

test('critic: saved in critic/ of a checkpoint, loaded with equal values; policy files unchanged', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-critic-'));
  const model = new Transformer(mcfg, 7);
  const critic = new Transformer({ ...mcfg, valueHead: true }, 8);
  const trainer = new Trainer(model, makeObjective('ppo'), { lr: 1e-3, padId: tok.padId }, model.clone(), critic);
  try {
    const batch = await rollouts(model);
    await trainer.trainStep(batch, 0); // a trained critic, not its initialisation
    const want = await trainer.values(batch);
    await saveCheckpoint(model, join(dir, 'with'), { version: 1 }, tok, { critic });
    await saveCheckpoint(model, join(dir, 'without'), { version: 1 }, tok);
    assert.ok(existsSync(join(dir, 'with', CRITIC_DIR, 'model.safetensors')));
    // The policy's own files are the same with or without a critic (exports, checksums read only these).
    const top = (d: string) =>
      readdirSync(d)
        .filter((f) => f !== CRITIC_DIR && f !== 'rft.json')
        .sort();
    assert.deepEqual(top(join(dir, 'with')), top(join(dir, 'without')));
    assert.ok(
      readFileSync(join(dir, 'with', 'model.safetensors')).equals(
        readFileSync(join(dir, 'without', 'model.safetensors')),
      ),
    );
    loadCheckpoint(join(dir, 'with')).model.dispose(); // the policy still loads (no stray tensors)
    assert.equal(loadCritic(join(dir, 'without'), mcfg), undefined);
    const loaded = loadCritic(join(dir, 'with'), mcfg)!;
    const t2 = new Trainer(model, makeObjective('ppo'), { lr: 1e-3, padId: tok.padId }, model.clone(), loaded);
    assert.deepEqual(await t2.values(batch), want);
    t2.dispose();
    loaded.dispose();
  } finally {
    trainer.dispose();
    model.dispose();
    critic.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('critic: a stage opened on a checkpoint continues its critic (values equal); without one it starts fresh', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-critic-'));
  const cfg = tinyConfig({ sync_offset: 0 }, 2, {
    stages: [{ name: 'ppo', algorithm: { name: 'ppo' }, steps: 2, batch_size: 4 }],
  });
  const stage = stagesOf(cfg)[0]!;
  const model = new Transformer(mcfg, 7);
  const saved = new Transformer({ ...mcfg, valueHead: true }, 123);
  const store = { count: async () => 0 };
  try {
    const batch = await rollouts(model);
    await saveCheckpoint(model, join(dir, 'v2'), { version: 2 }, tok, { critic: saved });
    const probe = new Trainer(model, makeObjective('ppo'), { lr: 0, padId: tok.padId }, model.clone(), saved);
    const want = await probe.values(batch);
    probe.dispose();
    const cont = await openStage(cfg, stage, model, tok, store, 'r', () => model.clone(), join(dir, 'v2'));
    assert.deepEqual(await cont.trainer.values(batch), want);
    cont.dispose();
    const fresh = await openStage(cfg, stage, model, tok, store, 'r', () => model.clone(), join(dir, 'nowhere'));
    assert.notDeepEqual(await fresh.trainer.values(batch), want);
    fresh.dispose();
  } finally {
    model.dispose();
    saved.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('critic: its AdamW state is saved beside it and a stage opened on the checkpoint continues it; a state that does not fit is refused by file and field', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-critic-'));
  const cfg = tinyConfig({ sync_offset: 0 }, 2, {
    stages: [{ name: 'ppo', algorithm: { name: 'ppo' }, steps: 2, batch_size: 4 }],
  });
  const stage = stagesOf(cfg)[0]!;
  const model = new Transformer(mcfg, 7);
  const critic = new Transformer({ ...mcfg, valueHead: true }, 8);
  const trainer = new Trainer(
    model,
    makeObjective('ppo'),
    { lr: 0, criticLr: 1e-2, padId: tok.padId },
    model.clone(),
    critic,
  );
  const store = { count: async () => 0 };
  try {
    const batch = await rollouts(model);
    for (let s = 0; s < 3; s++)
      await trainer.trainStep(
        batch.map((e) => ({ ...e })),
        s,
      );
    const saved = await trainer.criticOptimizer!.state();
    assert.ok(saved.t >= 3);
    await saveCheckpoint(model, join(dir, 'v3'), { version: 3 }, tok, {
      critic,
      criticOptimizer: trainer.criticOptimizer,
    });
    assert.ok(existsSync(join(dir, 'v3', CRITIC_DIR, OPTIMIZER_FILE)));
    const cont = await openStage(cfg, stage, model, tok, store, 'r', () => model.clone(), join(dir, 'v3'));
    try {
      const got = await cont.trainer.criticOptimizer!.state();
      assert.equal(got.t, saved.t, 'step count continued (bias correction as before the stop)');
      // Moments keyed by the parameters' names: the reloaded critic's variables are new tfjs variables.
      const byName = (st: typeof saved, m: Transformer) =>
        Object.fromEntries(m.variables().map((v) => [m.paramName(v.name), [...st.m[v.name]!, ...st.v[v.name]!]]));
      assert.deepEqual(byName(got, cont.trainer.critic!), byName(saved, critic));
      assert.ok(
        Object.values(byName(got, cont.trainer.critic!)).some((xs) => xs.some((x) => x !== 0)),
        'moments are not zero',
      );
    } finally {
      cont.dispose();
    }
    // A state missing a moment is refused by file and tensor, not loaded half.
    const head = join(dir, 'v3', CRITIC_DIR, OPTIMIZER_FILE);
    const { tensors, metadata } = readSafetensors(readFileSync(head), head);
    tensors.delete('v.value_head.bias');
    writeFileSync(
      head,
      writeSafetensors(new Map([...tensors].map(([k, t]) => [k, { shape: t.shape, data: t.data }])), metadata),
    );
    await assert.rejects(
      openStage(cfg, stage, model, tok, store, 'r', () => model.clone(), join(dir, 'v3')),
      (e: Error) =>
        e.message.includes(head) && e.message.includes('v.value_head.bias') && /moment missing/.test(e.message),
    );
  } finally {
    trainer.dispose();
    model.dispose();
    critic.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

const ppoStages = {
  stages: [
    { name: 'ppo1', algorithm: { name: 'ppo' }, steps: 2, batch_size: 4 },
    { name: 'ppo2', algorithm: { name: 'ppo' }, steps: 2, batch_size: 4 },
  ],
};

function trainRecords(runDir: string): Record<string, unknown>[] {
  return readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((r) => r.kind === 'train');
}

for (const method of ['memory', 'checkpoint'] as const) {
  test(`critic (${method} placement): critic_loss per step, critic in each checkpoint, the second PPO stage continues the first's`, async () => {
    const ws = tempWorkspace();
    const lines: string[] = [];
    setLogSink((_l, scope, msg) => lines.push(`${scope}: ${msg}`));
    try {
      const cfg = tinyConfig({ sync_offset: 0 }, 2, ppoStages);
      cfg.placement = method;
      await runJob({ config: cfg, workspace: ws, runId: 'c1', checkpointEvery: 1 });
      const runDir = join(ws, '.rft', 'runs', 'c1');
      const recs = trainRecords(runDir);
      assert.equal(recs.length, 4);
      for (const r of recs)
        assert.ok(
          Number.isFinite(r.critic_loss) && (r.critic_loss as number) > 0,
          `critic_loss in ${JSON.stringify(r)}`,
        );
      for (const v of [2, 4])
        assert.ok(
          existsSync(join(runDir, 'checkpoints', `v${v}`, CRITIC_DIR, 'model.safetensors')),
          `v${v} holds the critic`,
        );
      // Memory: this process's log; checkpoint: the trainer processes' logs (runDir/logs).
      const logs =
        method === 'memory'
          ? lines
          : readdirSync(join(runDir, 'logs')).flatMap((f) => readFileSync(join(runDir, 'logs', f), 'utf8').split('\n'));
      assert.ok(
        logs.some((l) => l.includes('critic: continued from') && l.trimEnd().endsWith(join('checkpoints', 'v2'))),
        `stage 2 continues stage 1's critic:\n${logs.join('\n')}`,
      );
      // The critic saved after stage 2 is not stage 1's: it kept training.
      const c2 = loadCritic(
        join(runDir, 'checkpoints', 'v2'),
        loadCheckpoint(join(runDir, 'checkpoints', 'v2')).model.config,
      )!;
      const c4 = loadCritic(join(runDir, 'checkpoints', 'v4'), c2.config)!;
      const w = async (m: Transformer) => Array.from((await m.params.get('value_head.weight')!.data()) as Float32Array);
      assert.notDeepEqual(await w(c2), await w(c4));
      c2.dispose();
      c4.dispose();
    } finally {
      setLogSink((level, scope, msg) => process.stderr.write(`${level.toUpperCase()} ${scope}: ${msg}\n`));
      rmSync(ws, { recursive: true, force: true });
    }
  });
}

test('critic (memory placement): a stopped and resumed run continues the critic of its checkpoint', async () => {
  const ws = tempWorkspace();
  const lines: string[] = [];
  setLogSink((_l, scope, msg) => lines.push(`${scope}: ${msg}`));
  try {
    const cfg = tinyConfig({ sync_offset: 0 }, 2, {
      stages: [{ name: 'ppo', algorithm: { name: 'ppo' }, steps: 8, batch_size: 4 }],
    });
    cfg.placement = 'memory';
    const runDir = join(ws, '.rft', 'runs', 'r1');
    // Stopped after its periodic eval at step 2 (the run never yields to a timer between steps).
    cfg.monitor.eval_every = 2;
    const ac = new AbortController();
    setLogSink((_l, scope, msg) => {
      lines.push(`${scope}: ${msg}`);
      if (msg.startsWith('eval after ppo step 2')) ac.abort();
    });
    const first = await runJob({ config: cfg, workspace: ws, runId: 'r1', signal: ac.signal, checkpointEvery: 100 });
    assert.ok(first.trainer_steps < 8, `stopped early (${first.trainer_steps})`);
    const stopDir = join(runDir, 'checkpoints', `v${first.trainer_steps}`);
    assert.ok(existsSync(join(stopDir, CRITIC_DIR, 'model.safetensors')), 'the stop checkpoint holds the critic');
    assert.ok(existsSync(join(stopDir, CRITIC_DIR, OPTIMIZER_FILE)), "and the critic's optimiser state");
    lines.length = 0;
    const done = await runJob({ resume: 'r1', workspace: ws, checkpointEvery: 100 });
    assert.equal(done.trainer_steps, 8);
    assert.ok(
      lines.some((l) => l.includes(`critic: continued from ${stopDir}`)),
      `resumed critic:\n${lines.join('\n')}`,
    );
    assert.ok(
      lines.some(
        (l) => l.includes(`critic: optimiser state continued from ${stopDir} (step `) && !l.includes('(step 0)'),
      ),
      `resumed critic optimiser:\n${lines.join('\n')}`,
    );
  } finally {
    setLogSink((level, scope, msg) => process.stderr.write(`${level.toUpperCase()} ${scope}: ${msg}\n`));
    rmSync(ws, { recursive: true, force: true });
  }
});

test("critic (distributed placement): critic_loss per step, critic beside each published version, the second PPO stage continues the first's", async (t) => {
  const pg = startPg();
  if ('skip' in pg) return t.skip(pg.skip);
  const ws = tempWorkspace();
  const lines: string[] = [];
  setLogSink((_l, scope, msg) => lines.push(`${scope}: ${msg}`));
  try {
    const url = pgSchemaUrl(pg.url);
    const cfg = tinyConfig({ sync_offset: 0 }, 2, ppoStages);
    const weights = join(ws, 'weights');
    await createDistributedRun(cfg, url, 'd1', weights);
    const stop = new AbortController();
    const explorer = distributedExplorer({ url, runId: 'd1', signal: stop.signal, leaseMs: 20_000 });
    let r;
    try {
      r = await distributedTrainer({ url, runId: 'd1', outDir: join(ws, 'out') });
      assert.equal(r.step, 4);
    } finally {
      stop.abort();
      await explorer;
    }
    const recs = trainRecords(r.outDir);
    assert.equal(recs.length, 4);
    for (const x of recs)
      assert.ok(Number.isFinite(x.critic_loss) && (x.critic_loss as number) > 0, `critic_loss in ${JSON.stringify(x)}`);
    for (const v of [2, 4])
      assert.ok(existsSync(join(weights, 'd1', `v${v}`, CRITIC_DIR, 'model.safetensors')), `v${v} holds the critic`);
    assert.ok(
      lines.some((l) => l.includes('critic: continued from') && l.trimEnd().endsWith(join('d1', 'v2'))),
      `stage 2 continues stage 1's critic:\n${lines.join('\n')}`,
    );
  } finally {
    setLogSink((level, scope, msg) => process.stderr.write(`${level.toUpperCase()} ${scope}: ${msg}\n`));
    rmSync(ws, { recursive: true, force: true });
    pg.stop();
  }
});
