// Every configured field is read or rejected: a field the schema accepts but the config's run would
// not read is an error naming its path, from `rft run` (loadRunConfig) and in the editor's Problems
// (configIssuesAt, at the key's line). Values equal to their defaults (a run folder's config.yaml
// written back with defaults filled in) stay valid, and so does every config shipped in configs/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { configIssuesAt } from '../../backend/core/config-lines.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { checkDistributedConfig } from '../../backend/coordinator/distributed/setup.js';

const BASE = {
  taskset: { builtin: 'reverse', size: 20 },
  workflow: { name: 'single_turn', reward: 'exact_match' },
};

function loadError(raw: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-unread-'));
  try {
    const f = join(dir, 'c.yaml');
    writeFileSync(f, stringify(raw));
    try {
      loadRunConfig(f);
    } catch (e) {
      return (e as Error).message;
    }
    return '';
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const CASES: [string, Record<string, unknown>][] = [
  [
    'algorithm',
    { ...BASE, algorithm: { name: 'grpo' }, stages: [{ name: 's', algorithm: { name: 'mix' }, steps: 2 }] },
  ],
  ['trainer.steps', { ...BASE, trainer: { steps: 7 }, stages: [{ name: 's', algorithm: { name: 'mix' }, steps: 2 }] }],
  ['taskset.size', { ...BASE, taskset: { path: 'x.jsonl', size: 5 } }],
  ['eval.seed', { ...BASE, eval: { path: 'x.jsonl', seed: 3 } }],
  ['eval.selector', { ...BASE, eval: { builtin: 'reverse', split: 'eval', selector: 'priority' } }],
  ['experts.selector', { ...BASE, experts: { builtin: 'reverse', selector: 'sequential' } }],
  ['taskset.priority_floor', { ...BASE, taskset: { builtin: 'reverse', size: 20, priority_floor: 0.3 } }],
  [
    'eval.priority_floor',
    {
      ...BASE,
      taskset: { builtin: 'reverse', size: 20, selector: 'priority' },
      eval: { builtin: 'reverse', split: 'eval', priority_floor: 0.3 },
    },
  ],
  ['explorer.endpoint', { ...BASE, explorer: { endpoint: { base_url: 'http://localhost:1/v1', model: 'm' } } }],
  ['explorer.eval_sampling.temperature', { ...BASE, explorer: { eval_sampling: { temperature: 0.7 } } }],
  ['tokenizer.vocab_size', { ...BASE, tokenizer: { kind: 'char', vocab_size: 300 } }],
  ['model.size', { ...BASE, model: { checkpoint: 'ck', size: 'small' } }],
  ['synchronizer.sync_interval', { ...BASE, placement: 'memory', synchronizer: { sync_interval: 2 } }],
  ['restart', { ...BASE, placement: 'memory', restart: 2 }],
  ['experts', { ...BASE, mode: 'explore', experts: { builtin: 'reverse' } }],
  ['explorer.workers', { ...BASE, mode: 'bench', explorer: { workers: 2 } }],
  ['monitor.eval_every', { ...BASE, mode: 'explore', monitor: { eval_every: 5 } }],
  // The stage loop trains in every stage: an explore stage of a training run would train as mode both.
  ['stages[0].mode', { ...BASE, stages: [{ name: 's', algorithm: { name: 'mix' }, steps: 2, mode: 'explore' }] }],
  // Modes without a trainer (placement/explore-bench.ts): no process restarts, no weights move, nothing trains.
  ['restart', { ...BASE, mode: 'explore', restart: 3 }],
  ['placement', { ...BASE, mode: 'bench', placement: 'memory' }],
  ['synchronizer.sync_offset', { ...BASE, mode: 'explore', synchronizer: { sync_offset: 1 } }],
  ['buffer.max_staleness', { ...BASE, mode: 'bench', buffer: { max_staleness: 4 } }],
  ['buffer.sampler', { ...BASE, mode: 'explore', buffer: { sampler: 'fifo' } }],
  ['trainer.lr', { ...BASE, mode: 'explore', trainer: { lr: 0.01, steps: 3 } }],
  ['trainer.steps', { ...BASE, mode: 'bench', trainer: { steps: 3 } }],
  ['stages', { ...BASE, mode: 'bench', stages: [{ name: 's', algorithm: { name: 'mix' }, steps: 2 }] }],
  ['algorithm', { ...BASE, mode: 'bench', algorithm: { name: 'grpo' } }],
  ['experience_pipeline', { ...BASE, mode: 'bench', experience_pipeline: [{ name: 'validity' }] }],
  ['explorer.repeat_times', { ...BASE, mode: 'bench', explorer: { repeat_times: 2 } }],
  ['explorer.sampling.max_new_tokens', { ...BASE, mode: 'bench', explorer: { sampling: { max_new_tokens: 4 } } }],
  ['taskset.selector', { ...BASE, mode: 'bench', taskset: { builtin: 'reverse', size: 20, selector: 'sequential' } }],
  [
    'stages[0].lr',
    { ...BASE, mode: 'explore', stages: [{ name: 's', algorithm: { name: 'mix' }, steps: 2, lr: 0.1 }] },
  ],
  // Top-level mode train beside stages: each stage's own mode decides (setup/trainer.ts stagesOf).
  ['mode', { ...BASE, mode: 'train', stages: [{ name: 's', algorithm: { name: 'mix' }, steps: 2 }] }],
  // No stage explores: no rollouts are sampled, no task picked (the trainer reads sampling.temperature only).
  ['explorer.repeat_times', { ...BASE, mode: 'train', explorer: { repeat_times: 4 } }],
  ['explorer.sampling.max_new_tokens', { ...BASE, mode: 'train', explorer: { sampling: { max_new_tokens: 4 } } }],
  [
    'taskset.selector',
    {
      ...BASE,
      taskset: { builtin: 'reverse', size: 20, selector: 'sequential' },
      stages: [{ name: 's', algorithm: { name: 'mix' }, steps: 2, mode: 'train' }],
    },
  ],
  [
    'stages[1].wall_seconds',
    {
      ...BASE,
      mode: 'explore',
      stages: [
        { name: 'a', algorithm: { name: 'grpo' }, steps: 2 },
        { name: 'b', algorithm: { name: 'grpo' }, wall_seconds: 60 },
      ],
    },
  ],
];

for (const [path, raw] of CASES) {
  test(`an unread ${path} is an error naming it (rft run and Problems)`, () => {
    // The schema refuses each: beside the section's fields (core/config-*.ts) or by mode, stages and placement (config-reads.ts).
    const v = validateRunConfig(raw);
    assert.ok(v.config || v.issues.some((i) => i.path === path), JSON.stringify(v.issues));
    const msg = loadError(raw);
    assert.match(msg, new RegExp(`field '${path.replace(/[.[\]]/g, '\\$&')}': `), msg);
    const text = stringify(raw);
    const at = configIssuesAt(text).find((i) => i.field === path);
    assert.ok(at, JSON.stringify(configIssuesAt(text)));
    const key = path
      .split('.')
      .at(-1)!
      .replace(/\[\d+\]$/, '');
    const lines = text.split('\n');
    assert.match(lines[at.line! - 1]!, new RegExp(`^\\s*(- )?${key}:`), `line ${at.line} is the key's line`);
  });
}

test('a distributed run (rft coordinator) refuses what its explorers and trainer do not read', () => {
  // Each read by a local run of synchronizer checkpoint (restart, workers) or an rft run of method memory.
  const local = { ...BASE, explorer: { workers: 2 }, restart: 3 };
  assert.equal(loadError(local), '');
  const dir = mkdtempSync(join(tmpdir(), 'rft-unread-'));
  try {
    for (const [path, raw] of [
      ['explorer.workers', { ...BASE, explorer: { workers: 2 } }],
      ['restart', { ...BASE, restart: 3 }],
      ['placement', { ...BASE, placement: 'memory' }],
      ['buffer.storage', { ...BASE, buffer: { storage: 'postgres://u@h/db' } }],
    ] as const) {
      const f = join(dir, 'c.yaml');
      writeFileSync(f, stringify(raw));
      assert.throws(
        () => loadRunConfig(f, { distributed: true }),
        (e: Error) => e.message.includes(`${f}: field '${path}': not read in a distributed run`),
        path,
      );
      // createDistributedRun's own check (the API, without a file) names the field as well.
      assert.match(
        checkDistributedConfig(validateRunConfig(raw).config!) ?? '',
        new RegExp(`^${path.replace('.', '\\.')}: `),
      );
    }
    // Their defaults, as a stored config writes them out, are fine.
    const full = validateRunConfig(BASE).config!;
    assert.equal(checkDistributedConfig(full), null);
    assert.equal(checkDistributedConfig({ ...full, buffer: { ...full.buffer, storage: 'postgres' } }), null);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('read fields and defaults written out are not reported', () => {
  assert.equal(
    loadError({ ...BASE, explorer: { endpoint: { base_url: 'http://localhost:1/v1', model: 'm' } }, mode: 'explore' }),
    '',
  );
  assert.equal(
    loadError({
      ...BASE,
      placement: 'checkpoint',
      synchronizer: { sync_offset: 1 },
      buffer: { max_staleness: 1 },
      restart: 1,
    }),
    '',
  );
  assert.equal(loadError({ ...BASE, tokenizer: { kind: 'bpe', vocab_size: 300 } }), '');
  // A stage that explores reads them; the trainer reads sampling.temperature in any run.
  assert.equal(
    loadError({
      ...BASE,
      explorer: { repeat_times: 4, sampling: { temperature: 0.7 } },
      stages: [
        { name: 'a', algorithm: { name: 'mix' }, steps: 2, mode: 'train' },
        { name: 'b', algorithm: { name: 'mix' }, steps: 2 },
      ],
    }),
    '',
  );
  assert.equal(loadError({ ...BASE, mode: 'train', explorer: { sampling: { temperature: 0.7 } } }), '');
  // A parsed config written back (every default filled in), as a run folder keeps it.
  const full = validateRunConfig({
    ...BASE,
    eval: { builtin: 'reverse', split: 'eval' },
    stages: [{ name: 's', algorithm: { name: 'mix' }, steps: 2 }],
  }).config!;
  assert.equal(loadError(full as unknown as Record<string, unknown>), '');
  // So do those of modes explore and bench (synchronizer.sync_offset, trainer.steps and the rest filled in).
  for (const mode of ['explore', 'bench'])
    assert.equal(
      loadError(validateRunConfig({ ...BASE, mode }).config as unknown as Record<string, unknown>),
      '',
      mode,
    );
});

test('every config shipped in configs/ loads (no unread field)', () => {
  const root = fileURLToPath(new URL('../../configs', import.meta.url));
  const files: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.ya?ml$/.test(n)) files.push(p);
    }
  };
  walk(root);
  assert.ok(files.length >= 8);
  for (const f of files) assert.doesNotThrow(() => loadRunConfig(f), f);
});
