// Sizes that need no arithmetic (issue 41 item 5): every refusal of `rft run --check` about batch
// sizes and expert rows says ONE fix, and that fix works: each case here applies the fix the message
// names to the config file and checks again, and the MIX case of the issue (6 demonstrations, the
// template's 4 tasks x 4 samples, a batch_size of 16) then trains a short real run. Before, the first
// fix offered two ways ("give 32 or more, or explore fewer tasks"), and the second led to a run
// that died at step 1 asking for a smaller batch_size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { records } from './consumption-check.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const check = (file: string) =>
  spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'backend/cli.ts'), 'run', file, '--check'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });

/** The config of the issue: MIX as the template writes it, with the batch_size of the old template. */
function mixConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'six-demos',
    seed: 3,
    model: { size: 'tiny-0.4m', max_seq_len: 48 },
    tokenizer: { kind: 'char' },
    taskset: { path: 'tasks.jsonl' },
    experts: { path: 'experts.jsonl' },
    workflow: { name: 'single_turn', reward: 'math_answer' },
    algorithm: { name: 'mix' },
    explorer: {
      tasks_per_step: 4,
      repeat_times: 4,
      sampling: { max_new_tokens: 4 },
      eval_sampling: { max_new_tokens: 4 },
    },
    trainer: { batch_size: 16, steps: 2 },
    placement: 'memory',
    ...extra,
  };
}

function workspace(): string {
  const ws = mkdtempSync(join(tmpdir(), 'rft-fixes-'));
  const tasks = Array.from({ length: 30 }, (_, i) => JSON.stringify({ prompt: `${i}+1=`, answer: String(i + 1) }));
  writeFileSync(join(ws, 'tasks.jsonl'), `${tasks.join('\n')}\n`);
  const demos = Array.from({ length: 6 }, (_, i) => JSON.stringify({ prompt: `${i}+${i}=`, response: String(2 * i) }));
  writeFileSync(join(ws, 'experts.jsonl'), `${demos.join('\n')}\n`);
  return ws;
}

/** The check's one refusal: its field and its one fix (the text after "Fix: "). */
function refusal(file: string): { field: string; line: string; fix: string } {
  const r = check(file);
  assert.equal(r.status, 1, `refused: ${r.stdout}${r.stderr}`);
  // The list of problems: one indented line each (the head line names the first field too).
  const lines = r.stderr.split('\n').filter((l) => /^\s+\S.*field '/.test(l));
  assert.equal(lines.length, 1, r.stderr);
  const m = /field '([^']+)': (.*)$/.exec(lines[0]!)!;
  const fixes = m[2]!.match(/Fix: /g) ?? [];
  assert.equal(fixes.length, 1, `one fix: ${m[2]}`);
  assert.doesNotMatch(m[2]!, /, or /, `no alternatives: ${m[2]}`);
  return { field: m[1]!, line: m[2]!, fix: m[2]!.slice(m[2]!.indexOf('Fix: ') + 5) };
}

/** Applies a fix as the message words it to the config file: `set PATH to N.` or `add experts: {path: FILE} …`. */
function applyFix(file: string, fix: string, expertsFile: string): void {
  const doc = parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const set = /^set ([\w.[\]]+) to (\d+)\.$/.exec(fix);
  const add = /^add experts: \{path: FILE\}/.exec(fix);
  if (set) {
    const keys = set[1]!.split(/\.|\[(\d+)\]\.?/).filter((k) => k !== undefined && k !== '');
    let at = doc as Record<string, unknown>;
    for (const k of keys.slice(0, -1)) at = at[k] as Record<string, unknown>;
    at[keys.at(-1)!] = Number(set[2]);
  } else if (add) doc.experts = { path: expertsFile };
  else assert.fail(`a fix this test cannot apply: ${fix}`);
  writeFileSync(file, stringify(doc));
}

const CASES: { name: string; config: Record<string, unknown>; field: string; fix: RegExp }[] = [
  {
    name: 'MIX, batch_size 16 with 16 rollouts a step (the issue)',
    config: mixConfig(),
    field: 'trainer.batch_size',
    fix: /^set trainer\.batch_size to 32\.$/,
  },
  {
    name: "a stage's own batch_size too small for its rollouts (GRPO)",
    config: mixConfig({
      algorithm: undefined,
      stages: [{ name: 'g', algorithm: { name: 'grpo' }, steps: 1, batch_size: 10 }],
      trainer: {},
    }),
    field: 'stages[0].batch_size',
    fix: /^set stages\[0\]\.batch_size to 16\.$/,
  },
  {
    name: 'MIX with no experts named (its own buffer starts empty)',
    config: mixConfig({ experts: undefined, trainer: { steps: 2 } }),
    field: 'algorithm.name',
    fix: /^add experts: \{path: FILE\}/,
  },
];

for (const c of CASES) {
  test(`rft run --check: ${c.name}: one fix, and with it applied the check passes`, { timeout: 300_000 }, () => {
    const ws = workspace();
    try {
      const file = join(ws, 'train.rft.yaml');
      writeFileSync(file, stringify(c.config));
      const r = refusal(file);
      assert.equal(r.field, c.field, r.line);
      assert.match(r.fix, c.fix, r.line);
      applyFix(file, r.fix, 'experts.jsonl');
      const again = check(file);
      assert.equal(again.status, 0, `after "${r.fix}": ${again.stderr}`);
      assert.equal(JSON.parse(again.stdout.trim().split('\n').at(-1)!).valid, true);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
}

test(
  "the issue's MIX config with its one fix applied trains: 16 rollouts + 16 expert rows a step from 6 demonstrations",
  {
    timeout: 300_000,
  },
  async () => {
    const ws = workspace();
    try {
      const file = join(ws, 'train.rft.yaml');
      writeFileSync(file, stringify(mixConfig()));
      applyFix(file, refusal(file).fix, 'experts.jsonl');
      const s = await runJob({ config: loadRunConfig(file), configPath: file, workspace: ws, runId: 'fixed' });
      assert.equal(s.trainer_steps, 2);
      const train = records(s.run_dir).filter((r) => r.kind === 'train');
      // 16 expert rows a step from 6 demonstrations: 6 distinct, the third pass over them reached.
      assert.deepEqual(
        train.map((r) => [r.expert_rows, r.expert_unique, r.expert_epoch]),
        [
          [16, 6, 3],
          [16, 6, 6],
        ],
      );
      assert.ok(
        train.every((r) => Number.isFinite(r.loss)),
        JSON.stringify(train.map((r) => r.loss)),
      );
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  },
);
