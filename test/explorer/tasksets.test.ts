import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { builtinTasksets } from '../../backend/explorer/tasksets/index.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';
import type { Task } from '../../backend/core/types.js';
import { closeSharedSandbox } from '../../backend/explorer/sandbox/index.js';

after(closeSharedSandbox);

const SCORED = ['arith', 'countdown', 'code', 'k12', 'vision'];

for (const name of [...SCORED, 'guess']) {
  test(`${name}: seeded, disjoint train/eval splits, unique eval prompts`, () => {
    const g = builtinTasksets.get(name);
    const a = g.generate(60, 3, 'train');
    const b = g.generate(60, 3, 'train');
    assert.equal(a.length, 60);
    assert.deepEqual(a, b, 'same seed, same tasks');
    assert.notDeepEqual(g.generate(60, 4, 'train'), a, 'another seed, other tasks');
    const ev = g.generate(40, 3, 'eval');
    assert.equal(ev.length, 40);
    // An episode of the guessing game is its prompt and its hidden secret.
    // A vision task is its question and its image.
    const key = (t: Task) =>
      name === 'guess'
        ? `${t.prompt}|${t.answer}`
        : name === 'vision'
          ? `${t.prompt}|${t.image!.rgb.join('')}`
          : t.prompt;
    const evalPrompts = new Set(ev.map(key));
    assert.equal(evalPrompts.size, ev.length, 'eval prompts unique');
    // Disjoint whatever the seeds: a train set from another seed shares no prompt with eval.
    for (const t of [...a, ...g.generate(200, 11, 'train')])
      assert.ok(!evalPrompts.has(key(t)), `train prompt in eval: ${key(t)}`);
    assert.ok(new Set(a.map((t) => t.id)).size === a.length);
  });
}

for (const name of SCORED) {
  test(`${name}: the reference solution earns full reward, a wrong or malformed answer does not`, async () => {
    const g = builtinTasksets.get(name);
    const reward = rewardFns.get(g.reward);
    const tasks = g.generate(name === 'code' ? 8 : 40, 5, 'train');
    for (const t of tasks) {
      const right = await reward(t, g.solve(t));
      assert.equal(right.status, 'ok', `${t.id}: ${right.reason}`);
      assert.equal(right.reward, 1, `${t.id} ${t.prompt} -> ${g.solve(t)} ${JSON.stringify(right.details)}`);
      const wrong = await reward(
        t,
        name === 'code' ? '```js\nfunction nope() { return 0; }\n```' : '<answer>-98765</answer>',
      );
      assert.equal(wrong.status, 'ok');
      assert.ok(wrong.reward < 1, `${t.id}: wrong answer scored ${wrong.reward}`);
      const junk = await reward(t, 'I do not know');
      assert.ok(junk.reward < 1);
    }
  });
}

test('code tasks carry tests whose expected values come from the reference implementation', () => {
  const tasks = builtinTasksets.get('code').generate(30, 1, 'train');
  for (const t of tasks) {
    assert.match(t.entryPoint!, /^[A-Za-z_$][\w$]*$/);
    assert.ok(t.tests!.length >= 3);
    assert.ok(String(t.metadata?.solution).includes(`function ${t.entryPoint}(`));
  }
});

test('k12 mixes word problems with units and multiple choice', () => {
  const tasks = builtinTasksets.get('k12').generate(100, 2, 'train');
  assert.ok(tasks.some((t) => t.choices?.length === 4 && /^[ABCD]$/.test(t.answer!)));
  assert.ok(tasks.some((t) => / cm$/.test(t.answer!)));
});
