// docs/files.md is generated from the files' header comments (scripts/gen-file-reference.mjs): this
// fails when the checked-in reference differs from what the script generates (a file added, moved or
// its header changed without regenerating), and when a source file has no header comment. The
// failure names the command that brings the reference up to date.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { generateReference, headerOf, REFERENCE_FILE, REGENERATE } from '../../scripts/gen-file-reference.mjs';

test('every source file opens with a header comment', () => {
  const { missing } = generateReference();
  assert.deepEqual(missing, [], `add a header comment (what the file is for) to: ${missing.join(', ')}`);
});

test(`docs/files.md is what \`${REGENERATE}\` generates`, () => {
  const want = generateReference().text;
  const have = readFileSync(REFERENCE_FILE, 'utf8');
  if (have === want) return;
  const a = have.split('\n');
  const b = want.split('\n');
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  assert.fail(
    `docs/files.md is stale from line ${i + 1}:\n  checked in: ${a[i] ?? '(end)'}\n  generated:  ${b[i] ?? '(end)'}\n` +
      `run \`${REGENERATE}\` and commit docs/files.md`,
  );
});

test('the header is the opening // block, after a shebang, as one paragraph', () => {
  assert.equal(headerOf('#!/usr/bin/env node\n// One.\n//   two\nimport x from "y";\n// not this\n'), 'One. two');
  assert.equal(headerOf('import x from "y";\n// late\n'), '');
});
