// Finding the Node that runs the backend: setting, PATH, too old, missing, broken.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findNode, parseMajor, realEnv, searchPath, type NodeFinderEnv } from '../../src/backend/node-finder.js';

function env(files: Record<string, string | Error>, PATH = '/a:/b'): NodeFinderEnv {
  return {
    PATH,
    platform: 'linux',
    isExecutable: (p) => p in files,
    version: async (p) => {
      const v = files[p];
      if (v instanceof Error) throw v;
      return v!;
    },
  };
}

test('parseMajor', () => {
  assert.equal(parseMajor('v20.11.1'), 20);
  assert.equal(parseMajor('18.0.0\n'), 18);
  assert.equal(parseMajor('garbage'), undefined);
});

test('PATH search takes the first executable node', () => {
  assert.equal(searchPath(env({ '/b/node': 'v22.0.0' })), '/b/node');
  assert.equal(searchPath(env({ '/a/node': 'v20.0.0', '/b/node': 'v22.0.0' })), '/a/node');
  assert.equal(searchPath(env({})), undefined);
});

test('finds node on PATH and accepts >= 20', async () => {
  const r = await findNode(undefined, env({ '/b/node': 'v20.1.0' }));
  assert.deepEqual(r, { ok: true, path: '/b/node', version: 'v20.1.0' });
});

test('no node anywhere: not-found with a message naming the setting', async () => {
  const r = await findNode('', env({}));
  assert.equal(r.ok, false);
  assert.equal(!r.ok && r.reason, 'not-found');
  assert.match(!r.ok ? r.message : '', /rftStudio\.nodePath/);
});

test('too old: says the version and what is needed', async () => {
  const r = await findNode(undefined, env({ '/a/node': 'v18.19.0' }));
  assert.equal(!r.ok && r.reason, 'too-old');
  assert.match(!r.ok ? r.message : '', /v18\.19\.0.*20 or newer/);
});

test('the setting wins over PATH; a missing configured path is reported', async () => {
  const ok = await findNode('/opt/node22/bin/node', env({ '/opt/node22/bin/node': 'v22.3.0', '/a/node': 'v18.0.0' }));
  assert.deepEqual(ok, { ok: true, path: '/opt/node22/bin/node', version: 'v22.3.0' });
  const missing = await findNode('/nope/node', env({ '/a/node': 'v22.0.0' }));
  assert.equal(!missing.ok && missing.reason, 'not-found');
  assert.match(!missing.ok ? missing.message : '', /\/nope\/node/);
});

test('a node whose --version fails is reported as broken', async () => {
  const r = await findNode(undefined, env({ '/a/node': new Error('exec format error') }));
  assert.equal(!r.ok && r.reason, 'broken');
});

test('the real environment finds this Node', async () => {
  const r = await findNode(process.execPath, realEnv);
  assert.equal(r.ok, true);
  assert.equal(r.ok && r.version, process.version);
});
