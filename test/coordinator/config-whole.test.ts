// A config is checked whole before any work: a bad algorithm, parameter, ratio, sampler, storage or
// operator in any stage is reported at its path (stages[1].algorithm.params.expert_ratio) before
// the first stage trains; numbers must be finite (YAML .inf / .nan).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import { validateRunConfig } from '../../backend/core/config.js';
import { checkRunConfig } from '../../backend/coordinator/config-check.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Two stages: SFT warm-up, then `second` (a MIX stage by default). */
function config(second = 'name: mix\n      params:\n        expert_ratio: 0.25', extra = ''): string {
  return `name: whole
model:
  size: tiny-0.4m
taskset:
  builtin: reverse
  size: 20
experts:
  builtin: reverse
  size: 8
workflow:
  reward: exact_match
stages:
  - name: warmup
    algorithm:
      name: sft
    steps: 2
  - name: mix
    algorithm:
      ${second}
    steps: 2
${extra}`;
}

function issuesOf(yaml: string): string[] {
  const v = validateRunConfig(parse(yaml));
  if (!v.config) return v.issues.map((i) => `${i.path}: ${i.message}`);
  return checkRunConfig(v.config).map((i) => `${i.path}: ${i.message}`);
}

test('a valid two-stage config has no issues', () => {
  assert.deepEqual(issuesOf(config()), []);
});

test('second-stage algorithm problems are named by path, with the close name', () => {
  const [a] = issuesOf(config('name: mixx'));
  assert.match(
    a!,
    /^stages\[1\]\.algorithm\.name: unknown algorithm 'mixx' \(did you mean 'mix'\?\); known: .*chord.*mix/,
  );
  const [b] = issuesOf(config('name: mix\n      params:\n        expert_ratoi: 0.5'));
  assert.match(
    b!,
    /^stages\[1\]\.algorithm\.params\.expert_ratoi: unknown parameter.*\(did you mean 'expert_ratio'\?\)/,
  );
  const [c] = issuesOf(config('name: mix\n      params:\n        expert_ratio: 1.5'));
  assert.match(c!, /^stages\[1\]\.algorithm\.params\.expert_ratio: must be a number from 0 to 1.*got 1\.5/);
  const [d] = issuesOf(config('name: mix\n      params:\n        expert_ratio: 1'));
  assert.match(d!, /^stages\[1\]\.algorithm\.params\.expert_ratio: 1 leaves no room in the batch for the rollouts/);
  const [e] = issuesOf(config('name: mix\n      params:\n        mu: "high"'));
  assert.match(e!, /^stages\[1\]\.algorithm\.params\.mu: /);
  const [f] = issuesOf(config('name: grpo\n      params:\n        kl_coef: "x"'));
  assert.match(f!, /^stages\[1\]\.algorithm\.params\.kl_coef: expected a number, got "x"/);
});

test('expert_ratio 1 is fine where the stage does not explore (mode train) or for sft', () => {
  assert.deepEqual(
    issuesOf(
      config('name: mix\n      params:\n        expert_ratio: 1')
        .replace(/(name: mix\n {4}algorithm:)/, '$1')
        .replace('    steps: 2\n', '    steps: 2\n')
        .replace(/- name: mix\n/, '- name: mix\n    mode: train\n'),
    ),
    [],
  );
  assert.deepEqual(issuesOf(config('name: sft\n      params:\n        expert_ratio: 1')), []);
});

test('sampler, storage, workflow, reward, taskset, selector and operators are checked by name', () => {
  const issues = issuesOf(
    config(
      'name: mix',
      `buffer:
  sampler: fifoo
  storage: sqlit
experience_pipeline:
  - name: validity
  - name: reward_filtr
`,
    )
      .replace('reward: exact_match', 'reward: exact_matsh\n  name: single_trun')
      .replace('builtin: reverse\n  size: 20', 'builtin: revrse\n  size: 20\n  selector: shufle'),
  );
  const paths = issues.map((i) => i.split(':')[0]);
  assert.deepEqual(
    paths.sort(),
    [
      'buffer.sampler',
      'buffer.storage',
      'experience_pipeline[1].name',
      'taskset.builtin',
      'taskset.selector',
      'workflow.name',
      'workflow.reward',
    ].sort(),
    issues.join('\n'),
  );
  assert.ok(issues.some((i) => /buffer\.storage: 'sqlit' is neither a storage .* \(did you mean 'sqlite'\?\)/.test(i)));
  assert.ok(issues.some((i) => /buffer\.sampler: unknown sampler 'fifoo' \(did you mean 'fifo'\?\)/.test(i)));
});

test('numbers must be finite: lr .inf and .nan anywhere are named by path', () => {
  const issues = issuesOf(config('name: mix\n      params:\n        mu: .nan', 'trainer:\n  lr: .inf\n'));
  assert.ok(issues.includes('trainer.lr: must be a finite number, got Infinity'), issues.join('\n'));
  assert.ok(issues.includes('stages[1].algorithm.params.mu: must be a finite number, got NaN'), issues.join('\n'));
});

test('loadRunConfig reports every problem of every stage at once, with the file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-whole-'));
  const file = join(dir, 'bad.rft.yaml');
  writeFileSync(file, config('name: mix\n      params:\n        expert_ratio: 1', 'buffer:\n  storage: sqlit\n'));
  assert.throws(
    () => loadRunConfig(file),
    (e: Error) => {
      assert.match(e.message, /2 problem\(s\)/);
      assert.ok(
        e.message.includes(`${file}: field 'stages[1].algorithm.params.expert_ratio': 1 leaves no room`),
        e.message,
      );
      assert.ok(e.message.includes(`${file}: field 'buffer.storage'`), e.message);
      return true;
    },
  );
});

test('rft run refuses a bad later stage before any work: no run record, no buffer file, no ./sqlit', () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-whole-ws-'));
  const file = join(ws, 'bad.rft.yaml');
  writeFileSync(file, config('name: mix\n      params:\n        expert_ratoi: 0.5', 'buffer:\n  storage: sqlit\n'));
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href,
      join(ROOT, 'backend/cli.ts'),
      'run',
      file,
      '--workspace',
      ws,
    ],
    { cwd: ws, encoding: 'utf8', timeout: 120_000 },
  );
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /stages\[1\]\.algorithm\.params\.expert_ratoi/);
  assert.equal(existsSync(join(ws, '.rft')), false, 'nothing created in the workspace');
  assert.equal(existsSync(join(ws, 'sqlit')), false);
});

test('a local rft run refuses the bare storage name postgres (the distributed commands take its URL from --buffer)', () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-whole-pg-'));
  const file = join(ws, 'pg.rft.yaml');
  writeFileSync(file, config(undefined, 'buffer:\n  storage: postgres\n'));
  // The same config is fine for the distributed commands (their check has no local rule).
  assert.deepEqual(checkRunConfig(validateRunConfig(parse(readFileSync(file, 'utf8'))).config!), []);
  for (const extra of [[], ['--check']]) {
    const r = spawnSync(
      process.execPath,
      [
        '--import',
        pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href,
        join(ROOT, 'backend/cli.ts'),
        'run',
        file,
        '--workspace',
        ws,
        ...extra,
      ],
      { cwd: ws, encoding: 'utf8', timeout: 120_000 },
    );
    assert.notEqual(r.status, 0, `rft run ${extra.join(' ')}: ${r.stdout}`);
    assert.ok(r.stderr.includes(`${file}: field 'buffer.storage': 'postgres' without a URL`), r.stderr);
    assert.equal(existsSync(join(ws, 'postgres')), false, 'no file called postgres');
    assert.equal(existsSync(join(ws, '.rft')), false, 'nothing created in the workspace');
  }
});
