// Hostile YAML in a run config (issue 40, items 21 and 24): a "billion laughs", a merge key that
// refers to its own map, thousands of aliases (quadratic in the parser) and a huge file ended in a
// bare ReferenceError naming no file, or took seconds to minutes. Each is now refused by file and
// line, before the expensive part; the editor's check (configIssuesAt) says the same at the line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { configIssuesAt } from '../../backend/core/config-lines.js';
import { MAX_YAML_ALIASES } from '../../backend/core/yaml-safe.js';
import { MAX_BYTES } from '../../backend/core/regular-file.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-yaml-bounds-'));
const HEAD = 'taskset:\n  builtin: arithmetic\nworkflow:\n  reward: math_answer\n';
const laughs = [
  'a: &a [x, x, x, x, x, x, x, x, x]',
  'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]',
  'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
  'd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]',
  'e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]',
].join('\n');
const cases: [string, string, RegExp][] = [
  [
    'laughs.yaml',
    `${HEAD}${laughs}\n`,
    /laughs\.yaml:6: YAML: its aliases expand to too much data \(a "billion laughs"\)/,
  ],
  [
    'merge.yaml',
    `${HEAD}model: &m\n  size: tiny-0.4m\n  <<: *m\n`,
    /merge\.yaml:7: YAML: alias '\*m' refers to the node it is in/,
  ],
  [
    'aliases.yaml',
    `${HEAD}x: &x 1\nl:\n${'  - *x\n'.repeat(MAX_YAML_ALIASES + 1)}`,
    new RegExp(`aliases\\.yaml:${7 + MAX_YAML_ALIASES}: YAML: more than ${MAX_YAML_ALIASES} aliases`),
  ],
  ['dup.yaml', `${HEAD}seed: 1\nseed: 2\n`, /dup\.yaml:6: duplicate key 'seed' \(first at line 5\)/],
  [
    'big.yaml',
    `${HEAD}name: "${'a'.repeat(MAX_BYTES.config)}"\n`,
    /big\.yaml: is 256\.1 KiB, over the limit of 256\.0 KiB for this kind of file/,
  ],
];

test('rft run refuses hostile YAML by file and line', () => {
  for (const [name, text, why] of cases) {
    const f = join(dir, name);
    writeFileSync(f, text);
    assert.throws(
      () => loadRunConfig(f),
      (e: Error) => {
        assert.equal(e.name, 'InputError', `${name}: ${e.name} ${e.message}`);
        assert.match(e.message, why);
        return true;
      },
    );
  }
});

test('the editor check places them at their line instead of failing the request', () => {
  for (const [name, text] of cases.slice(0, 4)) {
    const issues = configIssuesAt(text);
    assert.equal(issues.length >= 1, true, name);
    assert.equal(issues[0]!.field, '(syntax)', name);
    assert.ok((issues[0]!.line ?? 0) > 4, `${name}: ${JSON.stringify(issues[0])}`);
  }
});
