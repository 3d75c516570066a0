// `npm run bench -- vocab-memory`: peak memory of one training step at vocabularies 512, 49,152 and
// 151,669 (Qwen's tokenizer), with the chunked head (backend/model/logprobs.ts) against the unchunked
// one (the whole [B, T, V] logits at once, RFT_HEAD_CHUNK_MIB=0), measured in the same run.
//
// The step: a Qwen2-layout model (q/k/v biases, tied head; hidden 64, 2 layers: the head dominates
// as it does for a real model with a large vocabulary), the MIX objective with its KL reference
// model, 16 rows of 16 prompt + 64 response tokens (the template's 4 tasks x 4 samples, 64 new
// tokens), AdamW. The wasm heap only grows, so each variant runs in its own process and the heap's
// size after the step is the peak it needed; a variant that aborts the heap is reported as such.
// BENCH_VOCABS=512,49152 picks vocabularies; BENCH_STEPS (default 2) timed steps after a warm-up.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { report } from './report.js';

const VOCABS = (process.env.BENCH_VOCABS ?? '512,49152,151669').split(',').map(Number);
const ROWS = 16;
const PROMPT = 16;
const RESPONSE = 64;

if (process.argv[2] === '--child')
  await child(Number(process.argv[3]), process.argv[4] as 'chunked' | 'unchunked', Number(process.argv[5]));
else parent();

function parent(): void {
  const self = fileURLToPath(import.meta.url);
  for (const vocab of VOCABS) {
    // Unchunked at micro-batch 4 too: what a user had to set before (where the whole batch aborts).
    const variants: ['chunked' | 'unchunked', number][] = [
      ['chunked', 0],
      ['unchunked', 0],
      ['unchunked', 4],
    ];
    const got: Record<string, Record<string, unknown>> = {};
    for (const [path, micro] of variants) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', self, '--child', String(vocab), path, String(micro)], {
        encoding: 'utf8',
        env: { ...process.env, RFT_LOG_LEVEL: 'warn', ...(path === 'unchunked' ? { RFT_HEAD_CHUNK_MIB: '0' } : {}) },
        maxBuffer: 1 << 24,
      });
      const line = r.stdout.split('\n').find((l) => l.startsWith('{"child"'));
      const label = `${path}_mb${micro || ROWS}`;
      if (!line) {
        const why =
          /memory access out of bounds|out of memory|RangeError[^\n]*/i.exec(r.stderr)?.[0] ??
          `exit ${r.status} ${r.signal ?? ''}`;
        got[label] = { aborted: why };
        report({
          bench: 'vocab-memory',
          figure: `peak_heap_v${vocab}_${label}`,
          unit: 'MiB',
          value: NaN,
          aborted: why,
          rows: ROWS,
          micro_batch: micro || ROWS,
        });
        continue;
      }
      const m = JSON.parse(line) as Record<string, number>;
      got[label] = m;
      report({
        bench: 'vocab-memory',
        figure: `peak_heap_v${vocab}_${label}`,
        unit: 'MiB',
        value: m.heap_mib!,
        heap_after_first_step_mib: m.heap_after_first_step_mib,
        peak_tensors_mib: m.peak_tensors_mib,
        held_before_step_mib: m.held_mib,
        max_rss_mib: m.max_rss_mib,
        step_s: m.step_s,
        estimate_activations_mib: m.estimate_mib,
        auto_micro_batch: m.auto_micro,
        rows: ROWS,
        micro_batch: micro || ROWS,
        seq: `${PROMPT}+${RESPONSE}`,
        head_chunk_rows: m.chunk_rows,
      });
    }
    const c = got[`chunked_mb${ROWS}`] as Record<string, number> | undefined;
    const u = got[`unchunked_mb${ROWS}`] as Record<string, number> | undefined;
    if (c?.heap_mib && u?.heap_mib)
      report({
        bench: 'vocab-memory',
        figure: `heap_ratio_v${vocab}`,
        unit: 'x',
        value: u.heap_mib / c.heap_mib,
        baseline: 'unchunked peak heap / chunked',
        baseline_value: null,
        ratio: null,
        step_s_chunked: c.step_s,
        step_s_unchunked: u.step_s,
      });
  }
}

async function child(vocab: number, path: 'chunked' | 'unchunked', micro: number): Promise<void> {
  const { initEngine, tf } = await import('../backend/model/engine.js');
  const { makeConfig } = await import('../backend/model/config.js');
  const { Transformer } = await import('../backend/model/transformer.js');
  const { Trainer } = await import('../backend/trainer/trainer.js');
  const { makeObjective } = await import('../backend/trainer/resolve-algorithm.js');
  const { headChunkRows } = await import('../backend/model/logprobs.js');
  const { activationBytesPerRow } = await import('../backend/trainer/memory-plan.js');
  const { Rng } = await import('../backend/core/rng.js');
  await initEngine();
  const cfg = makeConfig({
    vocabSize: vocab,
    dModel: 64,
    nLayers: 2,
    nHeads: 4,
    nKvHeads: 2,
    dFF: 128,
    maxSeqLen: 256,
    attnBias: true,
    tieEmbeddings: true,
  });
  const model = new Transformer(cfg, 1);
  const reference = model.clone();
  const trainer = new Trainer(
    model,
    makeObjective('mix', {}),
    { lr: 1e-4, padId: 0, microBatchSize: micro },
    reference,
  );
  const rng = new Rng(1);
  const exps = Array.from({ length: ROWS }, (_, b) => {
    const resp = Array.from({ length: RESPONSE }, () => rng.int(8, vocab));
    return {
      id: `e${b}`,
      taskId: `t${b >> 2}`,
      groupId: `g${b >> 2}`,
      runId: 'bench',
      source: (b < ROWS / 4 ? 'expert' : 'usual') as 'expert' | 'usual',
      promptTokens: Array.from({ length: PROMPT }, () => rng.int(8, vocab)),
      promptText: '',
      responseTokens: resp,
      responseText: '',
      actionMask: resp.map(() => 1),
      logprobs: resp.map(() => -Math.log(vocab) + rng.normal() * 0.1),
      modelVersion: 0,
      reward: rng.next(),
      advantages: resp.map(() => rng.normal()),
      status: 'ok' as const,
      useCount: 0,
      createdAt: 0,
    };
  });
  const held = tf.memory().numBytes;
  // What the trainer would pick with micro_batch_size unset (plan() does not depend on the setting).
  const auto = trainer.plan(ROWS, PROMPT + RESPONSE).micro;
  let peakTensors = 0;
  const times: number[] = [];
  const steps = Number(process.env.BENCH_STEPS ?? 2);
  const heapSize = () => (tf.backend() as unknown as { wasm?: { HEAPU8?: Uint8Array } }).wasm?.HEAPU8?.length ?? NaN;
  let firstHeap = NaN;
  for (let i = 0; i < 1 + steps; i++) {
    const t0 = performance.now();
    const prof = await tf.profile(async () => {
      await trainer.trainStep(exps, 0);
    });
    if (i > 0) times.push((performance.now() - t0) / 1000);
    else firstHeap = heapSize();
    peakTensors = Math.max(peakTensors, prof.peakBytes);
  }
  const heap = (tf.backend() as unknown as { wasm?: { HEAPU8?: Uint8Array } }).wasm?.HEAPU8?.length ?? NaN;
  console.log(
    JSON.stringify({
      child: true,
      heap_mib: heap / 2 ** 20,
      heap_after_first_step_mib: firstHeap / 2 ** 20,
      peak_tensors_mib: peakTensors / 2 ** 20,
      held_mib: held / 2 ** 20,
      max_rss_mib: process.resourceUsage().maxRSS / 1024,
      step_s: times.sort((a, b) => a - b)[times.length >> 1],
      estimate_mib: (activationBytesPerRow(cfg, PROMPT + RESPONSE, path === 'chunked') * (micro || ROWS)) / 2 ** 20,
      auto_micro: auto,
      chunk_rows: headChunkRows(vocab),
    }),
  );
}
