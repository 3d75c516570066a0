// Dev: time each native call (by kind and shape) inside one 3m training step.
import { initEngine, tf } from '../backend/model/engine.js';
import { presetConfig } from '../backend/model/config.js';
import { Transformer } from '../backend/model/transformer.js';
import { lmLoss } from '../backend/model/logprobs.js';
import { AdamW } from '../backend/model/optim.js';
import { Rng } from '../backend/core/rng.js';
import { nativeAddon } from '../backend/model/native-blas.js';

const [preset = 'small-3m', Bs = '16', Ts = '128'] = process.argv.slice(2);
const B = Number(Bs), T = Number(Ts);
await initEngine();
const addon = nativeAddon() as any;
const acc = new Map<string, { ms: number; n: number }>();
let on = false;
for (const name of ['sgemm', 'attention', 'pointwise', 'adamw', 'sgemmExt', 'rope']) {
  const f = addon[name];
  if (!f) continue;
  addon[name] = (...a: any[]) => {
    const t0 = performance.now();
    const r = f.apply(addon, a);
    if (on) {
      let key = name;
      if (name === 'sgemm') key += ` b${a[4]} ${a[5]}x${a[6]}x${a[7]} t${a[8]}${a[9]}`;
      if (name === 'pointwise') key += ` op${a[1]}`;
      if (name === 'attention') key += ` ${a[1] ? 'fwd' : 'bwd'}`;
      const e = acc.get(key) ?? { ms: 0, n: 0 };
      e.ms += performance.now() - t0;
      e.n++;
      acc.set(key, e);
    }
    return r;
  };
}
const cfg = presetConfig(preset, 512);
const m = new Transformer(cfg, 1);
const opt = new AdamW(m.variables(), { lr: 1e-3 });
const rng = new Rng(1);
const ids = tf.tensor2d(Int32Array.from({ length: B * (T + 1) }, () => rng.int(8, 512)), [B, T + 1], 'int32');
const mask = tf.ones([B, T]) as tf.Tensor2D;
function step() {
  const { value, grads } = tf.variableGrads(() => lmLoss(m, ids, mask));
  opt.step(grads);
  value.dataSync();
  tf.dispose([value, ...Object.values(grads)]);
}
for (let i = 0; i < 3; i++) step();
const walls: number[] = [];
const N = Number(process.env.N ?? 8);
on = true;
for (let i = 0; i < N; i++) { const t0 = performance.now(); step(); walls.push(performance.now() - t0); }
walls.sort((a, b) => a - b);
const tot = [...acc.values()].reduce((s, e) => s + e.ms, 0) / N;
console.log(`wall median ${walls[N >> 1]!.toFixed(1)} ms (min ${walls[0]!.toFixed(1)}), native ${tot.toFixed(1)} ms/step`);
for (const [k, e] of [...acc.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 30))
  console.log(`${k.padEnd(36)} ${(e.ms / N).toFixed(2).padStart(8)} ms ${String(e.n / N).padStart(4)}x`);
