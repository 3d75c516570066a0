// Runs that keep weights outside the wasm heap where nothing trains them (external-weights.ts): the
// explorer process of a checkpoint-placement LoRA run loads each version outside the heap (its log
// says so), merges the adapters there and samples with the native decode, and its rollouts' log-probs
// are what the trainer recomputes from that version's checkpoint; a memory-placement LoRA run stopped
// and resumed loads its frozen base outside the heap again; in a distributed run (PostgreSQL) the
// trainer loads the newest version's frozen base outside (as on a restart) and the explorer each version.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateRunConfig } from '../../backend/core/config.js';
import { setLogSink } from '../../backend/core/log.js';
import { runJob } from '../../backend/coordinator/run.js';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { externalWeightsAvailable } from '../../backend/model/external-weights.js';
import { nativeAddon } from '../../backend/model/native-blas.js';
import { recomputeLogprobs } from '../../backend/explorer/llama-cpp-model.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { makeHfModel, type HfModelSpec } from '../../tools/hf-model.js';
import { checkDistributedConfig, createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { versionDir } from '../../backend/coordinator/distributed/weights.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import type { LogLevel } from '../../backend/core/log.js';

await initEngine();
const skip =
  externalWeightsAvailable() && nativeAddon()?.decodeExternal === true
    ? false
    : 'needs the wasm backend with vendor/rft-blas.node (sgemmExt, decode with external weights)';
const root = mkdtempSync(join(tmpdir(), 'rft-extw-runs-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
// Plain Llama (the native decode step takes it), untied head: the head is outside the heap too.
const LLAMA: HfModelSpec = {
  architecture: 'LlamaForCausalLM',
  tokenizer: 'qwen3',
  hidden: 32,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  intermediate: 48,
  tied: false,
  seed: 7,
};

function loraRun(checkpoint: string, method: 'memory' | 'checkpoint'): Record<string, unknown> {
  return {
    name: 'lora-outside',
    seed: 2,
    model: { checkpoint, lora: { rank: 4, alpha: 8, target_modules: ['q_proj', 'v_proj', 'up_proj', 'down_proj'] } },
    taskset: { builtin: 'reverse', size: 20 },
    eval: { builtin: 'reverse', size: 2, split: 'eval' },
    experts: { builtin: 'reverse', size: 8, seed: 99 },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    explorer: {
      tasks_per_step: 2,
      repeat_times: 2,
      sampling: { max_new_tokens: 6, temperature: 1 },
      eval_sampling: { max_new_tokens: 4 },
    },
    trainer: { batch_size: 4 },
    buffer: { storage: 'sqlite', max_staleness: 1 },
    placement: method,
    // SFT first, so the adapters the explorer merges are not zero when it samples.
    stages: [
      { name: 'warmup', algorithm: { name: 'sft' }, steps: 1, batch_size: 4, lr: 0.05 },
      { name: 'grpo', algorithm: { name: 'grpo' }, steps: 2, lr: 0.05 },
    ],
  };
}

/** Info-level (or `level`) log lines (child processes inherit the level), restored afterwards. */
async function withInfoLog<T>(fn: () => Promise<T>, level: LogLevel = 'info'): Promise<T> {
  const was = process.env.RFT_LOG_LEVEL;
  process.env.RFT_LOG_LEVEL = level;
  try {
    return await fn();
  } finally {
    if (was === undefined) delete process.env.RFT_LOG_LEVEL;
    else process.env.RFT_LOG_LEVEL = was;
  }
}

function restoreLogSink(): void {
  setLogSink((level, scope, msg, fields) =>
    process.stderr.write(
      `[${new Date().toISOString()}] ${level.toUpperCase()} ${scope}: ${msg}${fields && Object.keys(fields).length ? ' ' + JSON.stringify(fields) : ''}\n`,
    ),
  );
}

test(
  'checkpoint placement, LoRA: the explorer process loads each version outside the heap and its rollouts carry the log-probs the trainer recomputes',
  { skip },
  async () => {
    const hf = makeHfModel(join(root, 'llama-proc'), LLAMA);
    const { config, issues } = validateRunConfig(loraRun(hf, 'checkpoint'));
    assert.ok(config, JSON.stringify(issues));
    const s = await withInfoLog(() =>
      runJob({ config, workspace: join(root, 'ws-proc'), runId: 'proc', checkpointEvery: 1 }),
    );
    assert.equal(s.trainer_steps, 3);
    const explorerLog = readFileSync(join(s.run_dir, 'logs', 'explorer.log'), 'utf8');
    const loaded = [...explorerLog.matchAll(/v(\d+): ([\d.]+) MiB of weights outside the wasm heap/g)];
    assert.ok(loaded.length >= 1, `explorer log:\n${explorerLog.slice(-2000)}`);
    // Every projection, the embedding table and the head: all but the norms.
    const want = loadCheckpoint(hf, { external: true }).model;
    const mib = [...want.external.values()].reduce((a, w) => a + w.data.byteLength, 0) / 2 ** 20;
    want.dispose();
    for (const m of loaded) assert.equal(m[2], mib.toFixed(1));

    const store = await openStore(join(s.run_dir, 'buffer.db'));
    const exps = (await store.list({ runId: 'proc' })).filter((e) => e.source === 'usual' && e.split !== 'eval');
    await store.close();
    assert.ok(exps.length >= 4, `${exps.length} rollouts`);
    const versions = [...new Set(exps.map((e) => e.modelVersion))].sort();
    assert.ok(
      versions.some((v) => v >= 1),
      `sampled after training: versions ${versions}`,
    );
    let worst = 0;
    for (const v of versions) {
      const path = join(s.run_dir, 'checkpoints', `v${v}`);
      assert.ok(existsSync(path), path);
      // The trainer's side: the checkpoint in the heap, adapters unmerged.
      const ck = loadCheckpoint(path);
      if (v >= 1) assert.ok(ck.model.lora && ck.model.adapters.size > 0);
      for (const e of exps.filter((x) => x.modelVersion === v)) {
        assert.ok(e.responseTokens.length > 0);
        const re = await recomputeLogprobs(ck.model, e.promptTokens, e.responseTokens, 1);
        worst = Math.max(worst, ...re.map((x, i) => Math.abs(x - e.logprobs[i]!)));
      }
      ck.model.dispose();
    }
    console.log(
      `# checkpoint LoRA run: ${exps.length} rollouts over versions ${versions.join(', ')}, max |explorer log-prob - trainer recompute| = ${worst.toExponential(2)}`,
    );
    assert.ok(worst < 1e-3, `difference ${worst}`);
  },
);

test(
  'memory placement, LoRA: a run stopped after its first update resumes with the frozen base outside the heap and completes',
  { skip },
  async () => {
    const hf = makeHfModel(join(root, 'llama-mem'), LLAMA);
    const { config, issues } = validateRunConfig(loraRun(hf, 'memory'));
    assert.ok(config, JSON.stringify(issues));
    const ws = join(root, 'ws-mem');
    const runDir = join(ws, '.rft', 'runs', 'mem');
    const ac = new AbortController();
    const watcher = setInterval(() => {
      const f = join(runDir, 'metrics.jsonl');
      if (existsSync(f) && readFileSync(f, 'utf8').includes('"kind":"train"')) ac.abort();
    }, 20);
    const first = await runJob({ config, workspace: ws, runId: 'mem', signal: ac.signal, checkpointEvery: 1 }).finally(
      () => clearInterval(watcher),
    );
    assert.ok(first.trainer_steps >= 1);
    const lines: string[] = [];
    setLogSink((level, scope, msg) => {
      lines.push(`${scope}: ${msg}`);
      process.stderr.write(`${level.toUpperCase()} ${scope}: ${msg}\n`);
    });
    let done;
    try {
      done = await withInfoLog(() => runJob({ resume: 'mem', workspace: ws, checkpointEvery: 1 }));
    } finally {
      restoreLogSink();
    }
    assert.equal(done.trainer_steps, 3);
    const resumed = lines.find((l) =>
      /^coordinator: resumed from v(\d+): [\d.]+ MiB of weights outside the wasm heap$/.test(l),
    );
    assert.ok(resumed, `log:\n${lines.join('\n')}`);
    assert.equal(
      Number(/v(\d+)/.exec(resumed)![1]),
      first.trainer_steps,
      'resumed from the last checkpoint of the stopped run',
    );
    // The final checkpoint: the imported base bit for bit, trained adapters beside it.
    const final = loadCheckpoint(done.checkpoint as string);
    const orig = loadCheckpoint(hf);
    for (const [n, v] of orig.model.params)
      assert.deepEqual(await final.model.params.get(n)!.data(), await v.data(), n);
    assert.equal(final.model.lora?.rank, 4);
    final.model.dispose();
    orig.model.dispose();
  },
);

test(
  'distributed (PostgreSQL), LoRA: the trainer loads the frozen base outside the heap, the explorer each version; rollouts carry the log-probs of their version',
  { skip },
  async (t) => {
    const server = startPg();
    if ('skip' in server) return t.skip(server.skip);
    const dir = mkdtempSync(join(tmpdir(), 'rft-extw-dist-'));
    const lines: string[] = [];
    try {
      const hf = makeHfModel(join(root, 'llama-dist'), LLAMA);
      const { config, issues } = validateRunConfig(loraRun(hf, 'checkpoint'));
      assert.ok(config, JSON.stringify(issues));
      assert.equal(checkDistributedConfig(config), null);
      const url = pgSchemaUrl(server.url);
      const weights = join(dir, 'weights');
      await createDistributedRun(config, url, 'dl', weights);
      setLogSink((level, scope, msg) => {
        lines.push(`${scope}: ${msg}`);
        if (level !== 'debug') process.stderr.write(`${level.toUpperCase()} ${scope}: ${msg}\n`);
      });
      const tr = await withInfoLog(async () => {
        const stop = new AbortController();
        const explorer = distributedExplorer({ url, runId: 'dl', signal: stop.signal, leaseMs: 20_000, batch: 1 });
        try {
          return await distributedTrainer({ url, runId: 'dl', outDir: join(dir, 'out') });
        } finally {
          stop.abort();
          await explorer;
        }
      }, 'debug');
      restoreLogSink();
      assert.equal(tr.done, true);
      assert.ok(
        lines.some((l) => /^dist-trainer: run dl: v0 loaded, [\d.]+ MiB of weights outside the wasm heap$/.test(l)),
        `log:\n${lines.filter((l) => l.startsWith('dist-')).join('\n')}`,
      );
      const explorerLoads = lines.filter((l) =>
        /^dist-explorer: v\d+ loaded from .*, [\d.]+ MiB of weights outside the wasm heap$/.test(l),
      );
      assert.ok(explorerLoads.length >= 1, `log:\n${lines.filter((l) => l.startsWith('dist-explorer')).join('\n')}`);

      const store = await openStore(url);
      const exps = (await store.list({ runId: 'dl', source: 'usual', limit: 10_000 })).filter(
        (e) => e.split !== 'eval',
      );
      await store.close();
      assert.ok(exps.length >= 4, `${exps.length} rollouts`);
      let worst = 0;
      for (const v of new Set(exps.map((e) => e.modelVersion))) {
        const ck = loadCheckpoint(versionDir(weights, 'dl', v));
        for (const e of exps.filter((x) => x.modelVersion === v)) {
          const re = await recomputeLogprobs(ck.model, e.promptTokens, e.responseTokens, 1);
          worst = Math.max(worst, ...re.map((x, i) => Math.abs(x - e.logprobs[i]!)));
        }
        ck.model.dispose();
      }
      console.log(
        `# distributed LoRA run: ${exps.length} rollouts, ${explorerLoads.length} explorer loads outside the heap, max |explorer log-prob - recompute| = ${worst.toExponential(2)}`,
      );
      assert.ok(worst < 1e-3, `difference ${worst}`);
    } finally {
      restoreLogSink();
      server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
