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
  ['synchronizer.sync_interval', { ...BASE, synchronizer: { method: 'memory', sync_interval: 2 } }],
  ['restart', { ...BASE, synchronizer: { method: 'memory' }, restart: 2 }],
  ['experts', { ...BASE, mode: 'explore', experts: { builtin: 'reverse' } }],
  ['explorer.workers', { ...BASE, mode: 'bench', explorer: { workers: 2 } }],
  ['monitor.eval_every', { ...BASE, mode: 'explore', monitor: { eval_every: 5 } }],
];

for (const [path, raw] of CASES) {
  test(`an unread ${path} is an error naming it (rft run and Problems)`, () => {
    assert.ok(validateRunConfig(raw).config, 'the schema alone accepts it');
    const msg = loadError(raw);
    assert.match(msg, new RegExp(`field '${path.replace(/\./g, '\\.')}': `), msg);
    const text = stringify(raw);
    const at = configIssuesAt(text).find((i) => i.field === path);
    assert.ok(at, JSON.stringify(configIssuesAt(text)));
    const key = path.split('.').at(-1)!;
    const lines = text.split('\n');
    assert.match(lines[at.line! - 1]!, new RegExp(`^\\s*${key}:`), `line ${at.line} is the key's line`);
  });
}

test('read fields and defaults written out are not reported', () => {
  assert.equal(
    loadError({ ...BASE, explorer: { endpoint: { base_url: 'http://localhost:1/v1', model: 'm' } }, mode: 'explore' }),
    '',
  );
  assert.equal(
    loadError({
      ...BASE,
      synchronizer: { method: 'checkpoint', sync_offset: 1 },
      buffer: { max_staleness: 1 },
      restart: 1,
    }),
    '',
  );
  assert.equal(loadError({ ...BASE, tokenizer: { kind: 'bpe', vocab_size: 300 } }), '');
  // A parsed config written back (every default filled in), as a run folder keeps it.
  const full = validateRunConfig({
    ...BASE,
    eval: { builtin: 'reverse', split: 'eval' },
    stages: [{ name: 's', algorithm: { name: 'mix' }, steps: 2 }],
  }).config!;
  assert.equal(loadError(full as unknown as Record<string, unknown>), '');
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
