// The webgpu engine (Dawn + tfjs-backend-webgpu) against the cpu engine, on whatever adapter this
// machine has. Without a GPU that is SwiftShader's Vulkan driver (Debian's chromium ships it; the
// Vulkan loader is libvulkan1): a CPU implementation of the GPU API, so every GPU code path runs in CI.
// Skipped, with the reason, where Dawn finds no adapter at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { engineInfo, tf } from '../../backend/model/engine.js';
import { makeConfig, presetConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { lmLoss, tokenLogprobs } from '../../backend/model/logprobs.js';
import { generate } from '../../backend/model/generate.js';
import { AdamW, clipByGlobalNorm } from '../../backend/model/optim.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { makeLoraConfig } from '../../backend/model/lora.js';
import { ByteTestTokenizer } from '../helpers/byte-tokenizer.js';
import { makeHfModel } from '../../tools/hf-model.js';
import { assertF32Close, maxAbs, maxAbsDiff, ULPS } from '../helpers/f32-close.js';
import { runJob } from '../../backend/coordinator/run.js';
import { MetricsLog, runEngines } from '../../backend/coordinator/monitor.js';
import { tempWorkspace, tinyConfig } from '../coordinator/tiny-config.js';
import { spawnServe } from '../../tools/spawn-serve.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import { on, startWebgpu } from '../helpers/on-backend.js';

const { skip, probe } = await startWebgpu();
const root = mkdtempSync(join(tmpdir(), 'rft-webgpu-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

/** The loss and every trainable variable's gradient of lmLoss on a fixed batch. */
async function lossAndGrads(
  m: Transformer,
  ids: number[][],
): Promise<{ loss: number; grads: Map<string, Float32Array> }> {
  const x = tf.tensor2d(ids, [ids.length, ids[0]!.length], 'int32');
  const mask = tf.ones([x.shape[0], x.shape[1] - 1]) as tf.Tensor2D;
  const { value, grads } = tf.variableGrads(() => lmLoss(m, x, mask), m.variables());
  const out = new Map<string, Float32Array>();
  for (const [n, g] of Object.entries(grads)) out.set(m.paramName(n), (await g.data()) as Float32Array);
  const loss = (await value.data())[0]!;
  tf.dispose([x, mask, value, ...Object.values(grads)]);
  return { loss, grads: out };
}

function assertGradsClose(got: Map<string, Float32Array>, want: Map<string, Float32Array>, what: string): void {
  assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort(), `${what}: the same parameters have gradients`);
  for (const [n, g] of want) {
    // Gradients sum over the batch and positions in another order on the GPU; relative to the tensor's
    // largest entry, as the cpu-vs-native check does (test/model/native-blas.test.ts).
    const scale = Math.max(maxAbs(g), 1e-6);
    assert.ok(
      maxAbsDiff(got.get(n)!, g) / scale < 1e-4,
      `${what}: gradient of ${n} differs by ${maxAbsDiff(got.get(n)!, g)} (scale ${scale})`,
    );
  }
}

test('the webgpu engine names its adapter, and says when it is a CPU fallback', { skip }, () => {
  const info = engineInfo()!;
  assert.equal(info.backend, 'webgpu');
  assert.equal(tf.getBackend(), 'webgpu');
  assert.ok(info.adapter && info.adapter.name.length > 0);
  if (/swiftshader/i.test(`${probe.adapter!.vendor} ${probe.adapter!.architecture}`)) {
    assert.equal(info.adapter.fallback, true);
    assert.match(info.adapter.name, /CPU fallback/);
  }
  assert.equal(info.matmul, undefined, 'no wasm matmul on the GPU engine');
});

for (const preset of ['tiny-0.4m', 'small-3m'] as const) {
  test(`${preset}: forward, loss, gradients and one AdamW step on webgpu = the cpu engine`, { skip }, async () => {
    const cfg = presetConfig(preset, 96, { maxSeqLen: 32 });
    const m = await on('cpu', () => new Transformer(cfg, 3));
    const ids = [
      Array.from({ length: 24 }, (_, i) => (i * 7 + 1) % 96),
      Array.from({ length: 24 }, (_, i) => (i * 5 + 3) % 96),
    ];
    // One optimiser step on each engine from the same weights: the same log-probs after it.
    const lpAfter = async (backend: 'webgpu' | 'cpu') =>
      on(backend, async () => {
        const copy = m.clone();
        const opt = new AdamW(copy.variables(), { lr: 1e-3 });
        const x = tf.tensor2d(ids, [2, 24], 'int32');
        const mask = tf.ones([x.shape[0], x.shape[1] - 1]) as tf.Tensor2D;
        const { value, grads } = tf.variableGrads(() => lmLoss(copy, x, mask), copy.variables());
        opt.step(grads);
        const lp = tokenLogprobs(copy, x).logprobs;
        const out = (await lp.data()) as Float32Array;
        tf.dispose([x, mask, value, lp, ...Object.values(grads)]);
        opt.dispose();
        copy.dispose();
        return out;
      });
    // The cpu engine first: tfjs moves the variables to the GPU on first use there, and the webgpu
    // backend cannot read them back synchronously in Node (no OffscreenCanvas), so never the other way.
    const cpu = await on('cpu', () => lossAndGrads(m, ids));
    const cpuAfter = await lpAfter('cpu');
    const gpu = await on('webgpu', () => lossAndGrads(m, ids));
    assertF32Close([gpu.loss], [cpu.loss], ULPS.forward, `${preset} loss`);
    assertGradsClose(gpu.grads, cpu.grads, preset);
    assertF32Close(await lpAfter('webgpu'), cpuAfter, ULPS.twoPasses, `${preset} log-probs after one step`, 96);
    m.dispose();
  });
}

test(
  'clipByGlobalNorm over 40 gradients on webgpu = cpu (more inputs than a shader stage may bind)',
  { skip },
  async () => {
    const shapes = Array.from({ length: 40 }, (_, i) => [3 + (i % 5), 2 + (i % 3)]);
    const values = shapes.map(([r, c], i) =>
      Float32Array.from({ length: r! * c! }, (_, j) => Math.sin(i * 31 + j * 7)),
    );
    const clip = (backend: 'webgpu' | 'cpu') =>
      on(backend, async () => {
        const grads = Object.fromEntries(
          values.map((v, i) => [`g${i}`, tf.tensor2d(v, shapes[i] as [number, number])]),
        );
        const { grads: out, norm } = await clipByGlobalNorm(grads, 1);
        const first = (await out.g7!.data()) as Float32Array;
        tf.dispose(Object.values(out));
        return { norm, first };
      });
    const cpu = await clip('cpu');
    const gpu = await clip('webgpu');
    assert.ok(cpu.norm > 1, `norm ${cpu.norm} is clipped`);
    assertF32Close([gpu.norm], [cpu.norm], ULPS.forward, 'global norm');
    assertF32Close(gpu.first, cpu.first, ULPS.forward, 'a clipped gradient');
  },
);

test(
  'an HF-layout model with the real Qwen vocabulary (151k) and LoRA: log-probs and adapter gradients on webgpu = cpu',
  { skip },
  async () => {
    const dir = makeHfModel(join(root, 'qwen2'), {
      architecture: 'Qwen2ForCausalLM',
      tokenizer: 'qwen3',
      hidden: 32,
      layers: 2,
      heads: 4,
      kvHeads: 2,
      intermediate: 48,
      tied: true,
    });
    const m = await on('cpu', () => {
      const model = loadCheckpoint(dir).model;
      model.addLora(makeLoraConfig({ rank: 4, alpha: 8 }), 5);
      for (const [n, v] of model.adapters)
        if (n.includes('lora_B')) v.assign(tf.randomNormal(v.shape, 0, 0.3, 'float32', 9));
      return model;
    });
    const ids = [[1, 5, 900, 17, 4242, 33, 12, 7, 150000, 2]];
    const lp = (backend: 'webgpu' | 'cpu') =>
      on(backend, async () => {
        const t = tokenLogprobs(m, tf.tensor2d(ids, [1, 10], 'int32')).logprobs;
        const out = (await t.data()) as Float32Array;
        t.dispose();
        return out;
      });
    const cpuLp = await lp('cpu');
    const cpu = await on('cpu', () => lossAndGrads(m, ids));
    assertF32Close(await lp('webgpu'), cpuLp, ULPS.forward, 'LoRA log-probs', m.config.vocabSize);
    const gpu = await on('webgpu', () => lossAndGrads(m, ids));
    assert.equal(gpu.grads.size, 2 * 7 * 2, 'gradients for the adapters only');
    assertGradsClose(gpu.grads, cpu.grads, 'LoRA');
    m.dispose();
  },
);

test(
  "KV-cache sampling on webgpu: the cpu engine's greedy tokens, behaviour log-probs = the recompute",
  { skip },
  async () => {
    const tok = new ByteTestTokenizer();
    const m = await on(
      'cpu',
      () =>
        new Transformer(
          makeConfig({
            vocabSize: tok.vocabSize,
            dModel: 32,
            nLayers: 2,
            nHeads: 4,
            nKvHeads: 2,
            dFF: 64,
            maxSeqLen: 64,
            initStd: 0.3,
          }),
          4,
        ),
    );
    const prompts = [
      [tok.bosId, ...tok.encode('abc')],
      [tok.bosId, ...tok.encode('a longer prompt')],
    ];
    const opts = { maxNewTokens: 8, seed: 1, temperature: 0, stopTokens: [] };
    const cpu = await on('cpu', () => generate(m, tok, prompts, opts));
    const gpu = await on('webgpu', () => generate(m, tok, prompts, opts));
    assert.deepEqual(
      gpu.map((g) => g.tokens),
      cpu.map((g) => g.tokens),
    );
    for (let i = 0; i < prompts.length; i++) {
      assertF32Close(
        gpu[i]!.logprobs,
        cpu[i]!.logprobs,
        ULPS.twoPasses,
        `row ${i}: webgpu vs cpu decode`,
        tok.vocabSize,
      );
      const seq = [...prompts[i]!, ...gpu[i]!.tokens];
      const re = await on('webgpu', async () => {
        const t = tokenLogprobs(m, tf.tensor2d([seq], [1, seq.length], 'int32')).logprobs;
        const all = Array.from((await t.data()) as Float32Array);
        t.dispose();
        return all.slice(prompts[i]!.length - 1);
      });
      assertF32Close(gpu[i]!.logprobs, re, ULPS.twoPasses, `row ${i}: behaviour vs recompute on webgpu`, tok.vocabSize);
    }
    m.dispose();
  },
);

for (const method of ['memory', 'checkpoint'] as const) {
  test(
    `a tiny SFT + MIX run on webgpu through the run loop (synchronizer ${method}): completes, every process on the webgpu engine`,
    { skip },
    async () => {
      // Child processes (checkpoint placement) pick their engine from the environment, as `rft run` does.
      process.env.RFT_BACKEND = 'webgpu';
      const level = process.env.RFT_LOG_LEVEL;
      process.env.RFT_LOG_LEVEL = 'info'; // the engine line is an info line
      const ws = tempWorkspace();
      try {
        const cfg = tinyConfig({ sync_offset: 0 }, 2, {
          placement: method,
          synchronizer: { sync_interval: 1, sync_offset: 0 },
        });
        const s = await runJob({ config: cfg, workspace: ws, runId: `gpu-${method}` });
        assert.equal(s.trainer_steps, 4, 'SFT 2 + MIX 2 steps');
        assert.ok(Number.isFinite(s.final_accuracy), `final accuracy ${s.final_accuracy}`);
        const logDir = join(s.run_dir, 'logs'); // the explorer's and trainer's processes (checkpoint placement)
        const logs = existsSync(logDir)
          ? readdirSync(logDir)
              .map((f) => readFileSync(join(logDir, f), 'utf8'))
              .join('\n')
          : '';
        if (method === 'checkpoint')
          assert.match(logs, /tensor engine: webgpu/, 'the explorer and trainer processes ran on webgpu');
        assert.doesNotMatch(logs, /tensor engine: (wasm|cpu)/);
        // The dashboard names the GPU adapter the run trained on (from its metrics).
        const recs = new MetricsLog(join(s.run_dir, 'metrics.jsonl')).read();
        assert.equal(runEngines(recs)?.tensor, `webgpu: ${engineInfo()!.adapter!.name}`);
      } finally {
        delete process.env.RFT_BACKEND;
        process.env.RFT_LOG_LEVEL = level;
        rmSync(ws, { recursive: true, force: true });
      }
    },
  );
}

test(
  'a tiny MIX run on webgpu in the distributed placement (PostgreSQL): trainer and explorer train and sample on the webgpu engine',
  { skip },
  async (t) => {
    const pg = startPg();
    if ('skip' in pg) return t.skip(pg.skip);
    process.env.RFT_BACKEND = 'webgpu'; // each participant starts its engine from the environment, as `rft trainer` / `rft explorer` do
    try {
      const url = pgSchemaUrl(pg.url);
      const cfg = tinyConfig({ sync_offset: 0 }, 2, { buffer: { max_staleness: 0 } });
      await createDistributedRun(cfg, url, 'gpu-dist', join(root, 'dist-weights'));
      const stop = new AbortController();
      const explorer = distributedExplorer({ url, runId: 'gpu-dist', signal: stop.signal, leaseMs: 60_000 });
      try {
        const r = await distributedTrainer({ url, runId: 'gpu-dist', outDir: join(root, 'dist-out') });
        assert.equal(r.done, true);
      } finally {
        stop.abort();
        await explorer;
      }
      assert.equal(tf.getBackend(), 'webgpu');
      assert.equal(engineInfo()?.backend, 'webgpu');
      const store = await openStore(url);
      const exps = await store.list({ runId: 'gpu-dist', source: 'usual', limit: 1000 });
      await store.close();
      const trained = exps.filter((e) => e.split !== 'eval');
      assert.ok(trained.length >= 4, `${trained.length} rollouts`);
      assert.ok(
        trained.every((e) => e.logprobs.length === e.responseTokens.length && e.logprobs.every(Number.isFinite)),
      );
      assert.ok(new Set(trained.map((e) => e.modelVersion)).size >= 2, 'rollouts of more than one synced version');
    } finally {
      delete process.env.RFT_BACKEND;
      await pg.stop();
    }
  },
);

test('server/engine: what the status bar shows, from RFT_BACKEND, without starting an engine', async () => {
  const { engineSummary } = await import('../../backend/model/engine-summary.js');
  const cpu = await engineSummary({});
  assert.equal(cpu.engine, 'cpu');
  assert.equal(cpu.requested, 'auto');
  assert.match(cpu.detail, /^CPU: WebAssembly with /);
  const gpu = await engineSummary({ RFT_BACKEND: 'webgpu' });
  assert.equal(gpu.engine, 'webgpu');
  assert.equal(gpu.ok, Boolean(probe.adapter), gpu.detail);
  if (probe.adapter) assert.equal(gpu.fallback, probe.adapter.fallback);
  else assert.match(gpu.detail, /no GPU adapter/);
  // Through `rft serve`, as the extension asks it (rftStudio.engine: webgpu sets RFT_BACKEND there).
  const served = spawnServe(['--workspace', root], {
    RFT_FROM_SOURCE: '1',
    RFT_BACKEND: 'webgpu',
    RFT_WEBGPU_SWIFTSHADER: '1',
  });
  try {
    const answer = await served.request('server/engine', {});
    assert.deepEqual(
      { engine: answer.engine, ok: answer.ok, requested: answer.requested },
      { engine: 'webgpu', ok: gpu.ok, requested: 'webgpu' },
    );
  } finally {
    await served.close();
  }
});
