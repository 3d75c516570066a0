// The native in-place head (backend/model/logprobs.ts headLogprobsInPlace) read its targets in the
// backward pass although the tape may have freed them: a gradient through a loss that makes its own
// targets failed ("Cannot read properties of undefined (reading 'backend')"); the targets are now
// saved for the backward pass like the hidden rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tf, initEngine } from '../../backend/model/engine.js';
import { headLogprobs } from '../../backend/model/logprobs.js';
import { Transformer } from '../../backend/model/transformer.js';
import { makeConfig } from '../../backend/model/config.js';
import { nativeOpsAvailable } from '../../backend/model/native-ops.js';

await initEngine();
test(
  'the in-place head: targets made inside the loss and freed before the backward pass still give the right gradient',
  { skip: nativeOpsAvailable() ? false : 'the in-place head is the native path' },
  () => {
    const m = new Transformer(
      makeConfig({ vocabSize: 512, dModel: 32, nLayers: 1, nHeads: 4, nKvHeads: 2, dFF: 48, maxSeqLen: 32 }),
      5,
    );
    const N = 24;
    const hv = tf.variable(tf.randomNormal([N, 32], 0, 1, 'float32', 3) as tf.Tensor2D);
    const tg = Array.from({ length: N }, (_, i) => (i * 37 + 11) % 512);
    const grad = (inside: boolean) => {
      const keep = tf.tensor1d(tg, 'int32');
      const { grads } = tf.variableGrads(() => {
        // Targets made in the loss (as lmLoss slices them from the ids): the tape's tidy frees them.
        const t = inside ? (tf.add(tf.tensor1d(tg, 'int32'), tf.scalar(0, 'int32')) as tf.Tensor1D) : keep;
        return tf.mean(headLogprobs(m, hv as unknown as tf.Tensor2D, t).logprobs) as tf.Scalar;
      }, [hv]);
      const g = grads[hv.name]!.dataSync().slice();
      tf.dispose(Object.values(grads));
      keep.dispose();
      return g;
    };
    const a = grad(false);
    const b = grad(true);
    let worst = 0;
    for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
    assert.ok(worst < 1e-6, `gradients differ by ${worst}`);
    m.dispose();
  },
);
