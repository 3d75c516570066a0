// Issue 40 item 2: Dawn's GPU-probe warnings (printed by every process that probes, CPU-only runs
// too) are its reason for no GPU, never part of a run's failure dump; SwiftShader, when installed
// and unused, is named with the variable that turns it on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dawnReasons, isDawnLine } from '../../backend/core/dawn-lines.js';
import { tail } from '../../backend/server/run-poller.js';
import { swiftShaderHint } from '../../backend/model/webgpu.js';

// As Dawn prints them on a machine without a usable Vulkan driver (seen on this project's CI machine).
const DAWN = [
  'Warning: vkCreateInstance: Found no drivers!',
  'Warning: vkCreateInstance failed with VK_ERROR_INCOMPATIBLE_DRIVER',
  '    at CheckVkSuccessImpl (/home/runner/work/node-webgpu/node-webgpu/third_party/dawn/src/dawn/native/vulkan/VulkanError.cpp:106)',
];

test("a run's failure dump (the log's tail) leaves Dawn's probe warnings out", () => {
  const log = [
    '[2026-11-29T07:00:00.000Z] INFO run: starting',
    ...DAWN,
    '[2026-11-29T07:00:01.000Z] ERROR run: taskset.path: no such file',
  ].join('\n');
  assert.deepEqual(tail(log, 12), [
    '[2026-11-29T07:00:00.000Z] INFO run: starting',
    '[2026-11-29T07:00:01.000Z] ERROR run: taskset.path: no such file',
  ]);
  assert.ok(DAWN.every(isDawnLine));
  assert.ok(!isDawnLine('[2026-11-29T07:00:00.000Z] WARN run: Warning: the lr is high'));
  assert.deepEqual(dawnReasons(DAWN), [
    'vkCreateInstance: Found no drivers!',
    'vkCreateInstance failed with VK_ERROR_INCOMPATIBLE_DRIVER',
  ]);
});

test('SwiftShader installed and unused: the reason says how to run on it (RFT_WEBGPU_SWIFTSHADER=1)', () => {
  assert.match(swiftShaderHint(false, '/usr/lib/chromium/vk_swiftshader_icd.json', true), /RFT_WEBGPU_SWIFTSHADER=1/);
  assert.equal(swiftShaderHint(true, '/x.json', true), '', 'already in use');
  assert.equal(swiftShaderHint(false, '/x.json', false), '', 'not installed');
});
