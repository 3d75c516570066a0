import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, utimesSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../../backend/core/errors.js';
import { loadCustomDir, loadCustomFile } from '../../backend/explorer/custom.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';
import { workflows } from '../../backend/explorer/workflows/index.js';
import { environments } from '../../backend/explorer/environments/index.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-custom-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const write = (name: string, src: string) => {
  const f = join(dir, name);
  writeFileSync(f, src);
  return f;
};
const task = { id: 't', taskset: 'x', domain: 'text' as const, prompt: 'p', answer: 'yes' };

test('a .mjs file registers a reward, a workflow and an environment that the registries find', async () => {
  const f = write(
    'good.mjs',
    `
    export default function (rft) {
      rft.register('reward', 'says_please', async (task, response) => (response.includes('please') ? 1 : 0));
      rft.register('reward', 'detailed', (task, response) => ({ reward: response.length / 10, details: { len: response.length } }));
      rft.register('workflow', 'echo_wf', { async run(tasks, ctx) { return []; } });
      rft.register('environment', 'coin', { create: (task) => ({ step: (a) => ({ reward: a === 'heads' ? 1 : 0, done: true }) }) });
    }`,
  );
  const r = await loadCustomFile(f);
  assert.deepEqual(
    r.registered.map((x) => `${x.kind}:${x.name}`),
    ['reward:says_please', 'reward:detailed', 'workflow:echo_wf', 'environment:coin'],
  );
  assert.deepEqual(await rewardFns.get('says_please')(task, 'yes please'), { reward: 1, status: 'ok' });
  assert.equal((await rewardFns.get('detailed')(task, '12345')).reward, 0.5);
  assert.deepEqual(await workflows.get('echo_wf').run([], {} as never), []);
  assert.equal(environments.get('coin').create(task).step('heads').reward, 1);
});

test('a .ts file with types loads too', async () => {
  const f = write(
    'typed.ts',
    `
    interface Api { register(kind: string, name: string, impl: unknown): void }
    const score = (response: string): number => (response.trim() === 'yes' ? 1 : 0);
    export default function setup(rft: Api): void { rft.register('reward', 'is_yes_ts', async (_t: unknown, r: string) => score(r)); }`,
  );
  await loadCustomFile(f);
  assert.equal((await rewardFns.get('is_yes_ts')(task, ' yes ')).reward, 1);
});

test('editing and reloading a file replaces its implementation', async () => {
  const f = write('reload.mjs', `export default (rft) => rft.register('reward', 'version_rw', () => 1);`);
  await loadCustomFile(f);
  assert.equal((await rewardFns.get('version_rw')(task, '')).reward, 1);
  writeFileSync(f, `export default (rft) => rft.register('reward', 'version_rw', () => 2);`);
  const later = new Date(Date.now() + 5000);
  utimesSync(f, later, later);
  await loadCustomFile(f);
  assert.equal((await rewardFns.get('version_rw')(task, '')).reward, 2);
});

const BAD: [string, string, RegExp][] = [
  ['nodefault.mjs', `export const x = 1;`, /default export must be a function/],
  ['notfn.mjs', `export default { register: 1 };`, /default export must be a function/],
  ['syntax.mjs', `export default function (rft) { rft.register('reward', 'x', () => 1 `, /could not load/],
  ['throws.mjs', `export default function () { throw new Error('kaboom'); }`, /default export threw: kaboom/],
  [
    'kind.mjs',
    `export default (rft) => rft.register('loss', 'x', () => 1);`,
    /kind must be 'reward', 'workflow' or 'environment'/,
  ],
  ['name.mjs', `export default (rft) => rft.register('reward', '1 bad name', () => 1);`, /name must be letters/],
  [
    'builtin.mjs',
    `export default (rft) => rft.register('reward', 'exact_match', () => 1);`,
    /already a built-in reward/,
  ],
  [
    'notfnreward.mjs',
    `export default (rft) => rft.register('reward', 'r_obj', { score: 1 });`,
    /a reward must be a function/,
  ],
  [
    'badwf.mjs',
    `export default (rft) => rft.register('workflow', 'w_bad', { go() {} });`,
    /a workflow must be a function/,
  ],
  [
    'badenv.mjs',
    `export default (rft) => rft.register('environment', 'e_bad', {});`,
    /an environment must be an object with create/,
  ],
  [
    'twice.mjs',
    `export default (rft) => { rft.register('reward', 'dup_r', () => 1); rft.register('reward', 'dup_r', () => 1); };`,
    /registered twice/,
  ],
  ['nothing.mjs', `export default () => {};`, /registered nothing/],
  ['wrong.txt', `hello`, /must be a \.js, \.mjs, \.ts, \.mts file/],
];

for (const [name, src, why] of BAD) {
  test(`rejected with the file named: ${name}`, async () => {
    const f = write(name, src);
    await assert.rejects(loadCustomFile(f), (e: unknown) => {
      assert.ok(e instanceof InputError, String(e));
      assert.ok(e.message.includes(f), e.message);
      assert.match(e.message, why);
      return true;
    });
  });
}

test('a file that fails half-way keeps nothing it registered', async () => {
  const f = write(
    'half.mjs',
    `export default (rft) => { rft.register('reward', 'half_ok', () => 1); throw new Error('later'); };`,
  );
  await assert.rejects(loadCustomFile(f), /later/);
  assert.equal(rewardFns.has('half_ok'), false, 'the name was never registered');
});

test('at call time: a reward returning junk is infra_failure naming the file; a bad workflow result is one infra_failure row per sample naming it', async () => {
  const f = write(
    'junk.mjs',
    `
    export default (rft) => {
      rft.register('reward', 'junk_r', () => 'high');
      rft.register('workflow', 'junk_wf', async () => [{ id: 'a' }]);
    };`,
  );
  await loadCustomFile(f);
  const r = await rewardFns.get('junk_r')(task, '');
  assert.equal(r.status, 'infra_failure');
  assert.ok(r.reason!.includes(f) && /expected a finite number/.test(r.reason!), r.reason);
  const tok = CharTokenizer.train(['p yes']);
  const ctx = {
    model: { version: 3, tokenizer: tok, generate: async () => [] },
    reward: rewardFns.get('junk_r'),
    runId: 'r',
    repeatTimes: 2,
    sampling: { maxNewTokens: 4, temperature: 1, topK: 0, topP: 1, stopTokens: [] },
    step: 5,
    seed: 1,
    split: 'train' as const,
  };
  const rows = await workflows.get('junk_wf').run([task], ctx);
  assert.equal(rows.length, 2, 'one row per sample asked for');
  for (const e of rows) {
    assert.equal(e.status, 'infra_failure');
    assert.equal(e.groupId, 'r:train:5:t');
    assert.equal(e.modelVersion, 3);
    assert.ok(e.statusReason!.includes(f) && /taskId must be a string/.test(e.statusReason!), e.statusReason);
  }
});

test('a folder: bad files are reported, good ones load', async () => {
  const sub = join(dir, 'ext');
  mkdirSync(sub);
  writeFileSync(join(sub, 'a.mjs'), `export default (rft) => rft.register('reward', 'dir_a', () => 0.5);`);
  writeFileSync(join(sub, 'b.mjs'), `export default 3;`);
  writeFileSync(join(sub, 'notes.md'), `ignored`);
  const { loaded, errors } = await loadCustomDir(sub);
  assert.deepEqual(
    loaded.map((l) => l.registered[0]!.name),
    ['dir_a'],
  );
  assert.equal(errors.length, 1);
  assert.ok(errors[0]!.message.includes(join(sub, 'b.mjs')));
});
