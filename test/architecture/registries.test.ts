// Registries without side effects (issue 42 item 5): a family's built-ins are an explicit map in its
// registry module, so no product file imports a module only for what importing it registers, and no
// module calls `X.register(...)` at its top level (register is for the user's own parts, at run time).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const rel = join(dir, name);
    if (statSync(join(ROOT, rel)).isDirectory()) out.push(...files(rel));
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

const product = ['backend', 'src', 'webview'].flatMap(files);

test('no product file has a side-effect-only import of a project module', () => {
  const found = product.flatMap((f) =>
    readFileSync(join(ROOT, f), 'utf8')
      .split('\n')
      .flatMap((line, i) => (/^\s*import\s+'\.[^']*';/.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
  );
  assert.deepEqual(found, [], 'list the part in its family registry map instead');
});

test('no module registers a part at its top level', () => {
  const found = product.flatMap((f) =>
    readFileSync(join(ROOT, f), 'utf8')
      .split('\n')
      .flatMap((line, i) => (/^[A-Za-z_$][\w$]*\.register\(/.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
  );
  assert.deepEqual(found, [], 'list the part in its family registry map instead');
});

test('every built-in family is complete from its registry module alone', async () => {
  const { workflows } = await import('../../backend/explorer/workflows/index.js');
  const { rewardFns } = await import('../../backend/explorer/rewards/index.js');
  const { commands } = await import('../../backend/cli/commands/index.js');
  const { policyLosses } = await import('../../backend/trainer/algorithms/policy_loss/index.js');
  assert.deepEqual(workflows.names(), ['multi_turn', 'single_turn', 'vision']);
  assert.deepEqual(rewardFns.names(), ['code_tests', 'countdown', 'exact_match', 'k12', 'math_answer']);
  assert.deepEqual(policyLosses.names(), ['chord', 'dpo', 'mix', 'opmd', 'ppo', 'sft']);
  // Each map key is the part's own name.
  for (const n of workflows.names()) assert.equal(workflows.get(n).name, n);
  for (const n of policyLosses.names()) assert.equal(policyLosses.get(n).name, n);
  for (const n of commands.names()) assert.equal(commands.get(n).name, n);
  assert.ok(commands.has('run') && commands.has('buffer stats') && commands.has('stop'));
});
