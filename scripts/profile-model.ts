// Per-kernel time of one training step (forward, backward, AdamW) or one decode step of the
// transformer: `node --import tsx scripts/profile-model.ts [train|decode] [preset] [B] [T]`.
// Prints a table of kernels by total time; RFT_NATIVE_BLAS=0 profiles the wasm matmul.
// `... stages [preset] [B] [T]`: train-step and generation time with each native change switched
// on in turn, interleaved in one process so every stage sees the same machine load.
// `... calls [preset] [B] [T]`: each native addon call of a training step by kind and shape (ms per
// step, median wall of 10 steps after 3): what tf.profile shows only as "forward".
import { initEngine, tf } from '../backend/model/engine.js';
import { presetConfig } from '../backend/model/config.js';
import { Transformer } from '../backend/model/transformer.js';
import { lmLoss } from '../backend/model/logprobs.js';
import { AdamW } from '../backend/model/optim.js';
import { Rng } from '../backend/core/rng.js';
import { generate } from '../backend/model/generate.js';
import { nativeAddon, setNativeBlasEnabled } from '../backend/model/native-blas.js';
import { SPECIAL_TOKENS, type SpecialTokenName, type Tokenizer } from '../backend/model/tokenizer/types.js';

const [mode = 'train', preset = 'small-3m', Bs = '16', Ts = '128'] = process.argv.slice(2);
const B = Number(Bs);
const T = Number(Ts);
const info = await initEngine();
const cfg = presetConfig(preset, 512);
const m = new Transformer(cfg, 1);
const opt = new AdamW(m.variables(), { lr: 1e-3 });
const rng = new Rng(1);
const ids = tf.tensor2d(
  Int32Array.from({ length: B * (T + 1) }, () => rng.int(8, 512)),
  [B, T + 1],
  'int32',
);
const mask = tf.ones([B, T]) as tf.Tensor2D;

function trainStep(): void {
  const { value, grads } = tf.variableGrads(() => lmLoss(m, ids, mask));
  opt.step(grads);
  value.dataSync();
  tf.dispose([value, ...Object.values(grads)]);
}
function decodeStep(): void {
  tf.tidy(() => {
    const f = m.forward(tf.slice(ids, [0, 0], [B, T]) as tf.Tensor2D, { returnCache: true });
    const next = m.forward(tf.slice(ids, [0, T], [B, 1]) as tf.Tensor2D, { cache: f.cache, returnCache: true });
    next.logits.dataSync();
  });
}
if (mode === 'stages') {
  const stages: { name: string; blas: boolean; off: string[] }[] = [
    { name: 'wasm (before)', blas: false, off: [] },
    { name: '+ native BLAS matmul', blas: true, off: ['RFT_NATIVE_ATTENTION', 'RFT_NATIVE_OPS', 'RFT_NATIVE_DECODE'] },
    { name: '+ fused attention', blas: true, off: ['RFT_NATIVE_OPS', 'RFT_NATIVE_DECODE'] },
    { name: '+ fused RMSNorm/SwiGLU/embed/log-prob', blas: true, off: ['RFT_NATIVE_DECODE'] },
    { name: '+ native decode step', blas: true, off: [] },
  ];
  const tok: Tokenizer = {
    kind: 'char',
    vocabSize: 512,
    padId: 0,
    bosId: 1,
    eosId: 2,
    specialId: (n: SpecialTokenName) => Object.keys(SPECIAL_TOKENS).indexOf(n),
    encode: () => [],
    decode: () => '',
    toJSON: () => ({}),
  };
  const prompts = Array.from({ length: 16 }, () => Array.from({ length: 16 }, () => rng.int(8, 512)));
  const times = stages.map(() => ({ train: [] as number[], gen: [] as number[] }));
  for (let rep = 0; rep < 4; rep++) {
    for (const [i, st] of stages.entries()) {
      setNativeBlasEnabled(st.blas);
      for (const k of ['RFT_NATIVE_ATTENTION', 'RFT_NATIVE_OPS', 'RFT_NATIVE_DECODE']) {
        if (st.off.includes(k)) process.env[k] = '0';
        else delete process.env[k];
      }
      let t0 = performance.now();
      trainStep();
      const tr = performance.now() - t0;
      t0 = performance.now();
      await generate(m, tok, prompts, { maxNewTokens: 64, stopTokens: [], seed: rep });
      const gen = performance.now() - t0;
      if (rep > 0) {
        times[i]!.train.push(tr);
        times[i]!.gen.push(gen);
      }
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  console.log(`stages ${preset} train ${B}x${T}, generate 16 prompts x 64 new (median of 3, interleaved)`);
  for (const [i, st] of stages.entries()) {
    const tr = med(times[i]!.train);
    const gen = med(times[i]!.gen);
    console.log(
      `${st.name.padEnd(40)} train ${tr.toFixed(0).padStart(6)} ms ${((B * T) / (tr / 1000)).toFixed(0).padStart(6)} tok/s   generate ${gen.toFixed(0).padStart(6)} ms ${((16 * 64) / (gen / 1000)).toFixed(0).padStart(6)} tok/s`,
    );
  }
  process.exit(0);
}
if (mode === 'calls') {
  const addon = nativeAddon() as unknown as Record<string, (...a: unknown[]) => unknown> | undefined;
  if (!addon) throw new Error(`no native addon: ${info.matmul?.detail ?? info.backend}`);
  const acc = new Map<string, { ms: number; n: number }>();
  let on = false;
  for (const name of ['sgemm', 'sgemmExt', 'attention', 'pointwise', 'rope', 'adamw']) {
    const f = addon[name];
    if (!f) continue;
    addon[name] = (...a: unknown[]) => {
      const t0 = performance.now();
      const r = f.apply(addon, a);
      if (on) {
        // sgemm: batch MxNxK and transposes; pointwise: its op number; attention: direction.
        const key =
          name === 'sgemm'
            ? `sgemm b${a[4]} ${a[5]}x${a[6]}x${a[7]} t${a[8]}${a[9]}`
            : name === 'pointwise'
              ? `pointwise op${a[1]}`
              : name === 'attention'
                ? `attention ${a[1] ? 'forward' : 'backward'}`
                : name;
        const e = acc.get(key) ?? { ms: 0, n: 0 };
        e.ms += performance.now() - t0;
        e.n++;
        acc.set(key, e);
      }
      return r;
    };
  }
  for (let i = 0; i < 3; i++) trainStep();
  const walls: number[] = [];
  const N = 10;
  on = true;
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    trainStep();
    walls.push(performance.now() - t0);
  }
  walls.sort((a, b) => a - b);
  const native = [...acc.values()].reduce((s, e) => s + e.ms, 0) / N;
  console.log(
    `calls ${preset} ${B}x${T}: step ${walls[N >> 1]!.toFixed(1)} ms (median of ${N}), native calls ${native.toFixed(1)} ms`,
  );
  for (const [k, e] of [...acc.entries()].sort((a, b) => b[1].ms - a[1].ms))
    console.log(`${k.padEnd(36)} ${(e.ms / N).toFixed(2).padStart(8)} ms ${String(e.n / N).padStart(4)} calls`);
  process.exit(0);
}
const run = mode === 'train' ? trainStep : decodeStep;
for (let i = 0; i < 2; i++) run();
const t0 = performance.now();
run();
const wall = performance.now() - t0;
const prof = await tf.profile(run);
const by = new Map<string, { ms: number; n: number }>();
for (const k of prof.kernels) {
  const e = by.get(k.name) ?? { ms: 0, n: 0 };
  e.ms += k.kernelTimeMs as number;
  e.n++;
  by.set(k.name, e);
}
const total = [...by.values()].reduce((s, e) => s + e.ms, 0);
console.log(
  `${mode} ${preset} ${B}x${T} on ${info.backend} (matmul: ${info.matmul?.kernel ?? 'n/a'}): wall ${wall.toFixed(0)} ms, kernels ${total.toFixed(0)} ms, ${prof.kernels.length} kernel calls`,
);
for (const [name, e] of [...by.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25)) {
  console.log(
    `${name.padEnd(22)} ${e.ms.toFixed(1).padStart(8)} ms ${((100 * e.ms) / total).toFixed(1).padStart(5)}%  ${String(e.n).padStart(5)} calls`,
  );
}
