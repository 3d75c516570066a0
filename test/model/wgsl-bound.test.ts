// Bound WGSL dispatches (wgsl/runner.ts bindWgsl / recordBound / WgslUniforms / writeWgslTensor): a
// bind group made once and recorded many times must still see the values each recording was made
// with. The hazards: a queue write (new uniforms, new token ids) overtaking work recorded before it
// but not yet submitted, and a weight reassigned (a new buffer) under a bind group made for the old
// one. Runs on SwiftShader without a GPU; skipped, with the reason, where Dawn finds no adapter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tf } from '../../backend/model/engine.js';
import { bindWgsl, recordBound, WgslUniforms, wgslKernel, writeWgslTensor } from '../../backend/model/wgsl/runner.js';
import { on, startWebgpu } from '../helpers/on-backend.js';

const { skip } = await startWebgpu();

/** out[i] = x[i] * u.s + u.t, written in place into `out`. */
const scale = wgslKernel(
  'test_scale',
  {
    inputs: [['x', 'f32']],
    outputs: [['out', 'f32']],
    uniforms: [
      ['s', 'f32'],
      ['t', 'f32'],
    ],
  },
  `@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i < arrayLength(&out)) { out[i] = x[i] * u.s + u.t; }
}`,
);

/** out[i] = x[i] + 1, no uniforms. */
const plusOne = wgslKernel(
  'test_plus_one',
  { inputs: [['x', 'f32']], outputs: [['out', 'f32']] },
  `@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i < arrayLength(&out)) { out[i] = x[i] + 1.0; }
}`,
);

test('new uniforms do not reach a dispatch recorded before them', { skip }, async () => {
  await on('webgpu', async () => {
    // A large submit batch: nothing recorded here is submitted until a read or a flush.
    const prev = tf.env().get('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE');
    tf.env().set('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE', 1000);
    const x = tf.tensor1d([1, 2, 3]);
    const a = tf.zeros([3]);
    const b = tf.zeros([3]);
    const u = new WgslUniforms(scale, { s: 2, t: 0 });
    try {
      const toA = bindWgsl({ kernel: scale, inputs: [x], inouts: [a], uniforms: u, workgroups: [1] });
      const toB = bindWgsl({ kernel: scale, inputs: [x], inouts: [b], uniforms: u, workgroups: [1] });
      recordBound([toA]);
      u.set({ s: 10, t: 1 });
      recordBound([toB]);
      assert.deepEqual(Array.from(await a.data()), [2, 4, 6]);
      assert.deepEqual(Array.from(await b.data()), [11, 21, 31]);
      // The same bound dispatch recorded again after a set sees the new values.
      u.set({ s: -1, t: 0 });
      recordBound([toA]);
      assert.deepEqual(Array.from(await a.data()), [-1, -2, -3]);
    } finally {
      u.dispose();
      tf.dispose([x, a, b]);
      tf.env().set('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE', prev);
    }
  });
});

test('a tensor written in place does not reach a dispatch recorded before the write', { skip }, async () => {
  await on('webgpu', async () => {
    const prev = tf.env().get('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE');
    tf.env().set('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE', 1000);
    const x = tf.zeros([4]);
    const a = tf.zeros([4]);
    const b = tf.zeros([4]);
    try {
      writeWgslTensor(x, Float32Array.from([1, 2, 3, 4]));
      const toA = bindWgsl({ kernel: plusOne, inputs: [x], inouts: [a], workgroups: [1] });
      const toB = bindWgsl({ kernel: plusOne, inputs: [x], inouts: [b], workgroups: [1] });
      recordBound([toA]);
      writeWgslTensor(x, Float32Array.from([10, 20, 30, 40]));
      recordBound([toB]);
      assert.deepEqual(Array.from(await a.data()), [2, 3, 4, 5]);
      assert.deepEqual(Array.from(await b.data()), [11, 21, 31, 41]);
      assert.throws(() => writeWgslTensor(x, new Float32Array(3)), /3 values for a tensor of 4/);
    } finally {
      tf.dispose([x, a, b]);
      tf.env().set('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE', prev);
    }
  });
});

test('a bound dispatch follows a reassigned variable and refuses a disposed input', { skip }, async () => {
  await on('webgpu', async () => {
    const w = tf.variable(tf.tensor1d([1, 1]));
    const out = tf.zeros([2]);
    try {
      const bd = bindWgsl({ kernel: plusOne, inputs: [w], inouts: [out], workgroups: [1] });
      recordBound([bd]);
      assert.deepEqual(Array.from(await out.data()), [2, 2]);
      // assign() moves the variable to the new value's buffer; the old one goes back to the pool.
      w.assign(tf.tensor1d([5, 7]));
      // Something else takes buffers from the pool meanwhile, so a stale binding would read garbage.
      const other = tf.add(tf.tensor1d([100, 100]), 1);
      recordBound([bd]);
      assert.deepEqual(Array.from(await out.data()), [6, 8]);
      other.dispose();
      w.dispose();
      assert.throws(() => recordBound([bd]), /test_plus_one: input 0 \[2\] is disposed/);
    } finally {
      if (!w.isDisposed) w.dispose();
      out.dispose();
    }
  });
});

test('uniforms of other fields, none where the kernel has some, or disposed ones are refused', { skip }, async () => {
  await on('webgpu', async () => {
    const x = tf.ones([2]);
    const out = tf.zeros([2]);
    const u = new WgslUniforms(scale, { s: 1, t: 0 });
    try {
      assert.throws(
        () => bindWgsl({ kernel: scale, inputs: [x], inouts: [out], workgroups: [1] }),
        /test_scale: bound with uniforms that are not its own fields/,
      );
      assert.throws(
        () => bindWgsl({ kernel: plusOne, inputs: [x], inouts: [out], uniforms: u, workgroups: [1] }),
        /test_plus_one: bound with uniforms/,
      );
      assert.throws(() => u.set({ s: 1 }), /uniform 't' is undefined/);
      const bd = bindWgsl({ kernel: scale, inputs: [x], inouts: [out], uniforms: u, workgroups: [1] });
      u.dispose();
      assert.throws(() => recordBound([bd]), /test_scale: its uniforms are disposed/);
      assert.throws(
        () => bindWgsl({ kernel: scale, inputs: [x], inouts: [out], uniforms: u, workgroups: [1] }),
        /test_scale: its uniforms are disposed/,
      );
    } finally {
      u.dispose();
      tf.dispose([x, out]);
    }
  });
});
