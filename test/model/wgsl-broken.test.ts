// A WGSL kernel that does not compile (wgsl/runner.ts): a message naming the kernel, never a dispatch
// whose read waits forever or returns zeros. In a file of its own: the failed dispatch leaves this
// process's device failed (gpu-guard.ts), which would fail any webgpu test after it. Runs on
// SwiftShader without a GPU; skipped, with the reason, where Dawn finds no adapter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tf } from '../../backend/model/engine.js';
import { InfrastructureError } from '../../backend/core/errors.js';
import { compileWgslKernels, runWgsl, wgslKernel, wgslKernelErrors } from '../../backend/model/wgsl/runner.js';
import { startWebgpu } from '../helpers/on-backend.js';

const { skip } = await startWebgpu();

// `undefined_fn` does not exist: a shader compile error.
const brokenKernel = (name: string) =>
  wgslKernel(
    name,
    { inputs: [['x', 'f32']], outputs: [['out', 'f32']] },
    `@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  out[gid.x] = undefined_fn(x[gid.x]);
}`,
  );

test('a kernel that does not compile: named, refused by name, and a read after it throws', { skip }, async () => {
  const x = tf.tensor1d([1, 2, 3]);
  const run = (k: ReturnType<typeof brokenKernel>) =>
    runWgsl({ kernel: k, inputs: [x], outputs: [{ shape: [3] }], workgroups: [1] });

  // Compiled ahead (the bench, the tests): the error names the kernel, and it is never dispatched.
  const ahead = brokenKernel('test_broken_ahead');
  const errors = await compileWgslKernels([ahead]);
  assert.equal(errors.length, 1);
  assert.match(errors[0]!, /^test_broken_ahead: .*undefined_fn/s);
  assert.throws(() => run(ahead), /WGSL kernel test_broken_ahead failed to compile: .*undefined_fn/s);

  // Not compiled ahead: its first dispatch records an invalid pipeline. The read then throws (the
  // guard): it neither waits forever nor reads zeros.
  const late = brokenKernel('test_broken_late');
  const [out] = run(late);
  await assert.rejects(out!.data(), InfrastructureError);
  assert.ok(
    wgslKernelErrors().some((e) => e.startsWith('test_broken_late: ')),
    JSON.stringify(wgslKernelErrors()),
  );
  // Once its error is in, it is refused before anything is recorded.
  assert.throws(() => run(late), /WGSL kernel test_broken_late failed to compile: .*undefined_fn/s);
  tf.dispose([x, out!]);
});
