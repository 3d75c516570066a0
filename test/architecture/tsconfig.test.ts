// Two TypeScript projects: tsconfig.json (node: backend, src, tests) without the DOM types, so code
// that runs in node cannot use `document` or `window` by mistake, and webview/tsconfig.json (the
// webviews and what runs inside a page) with them; every TypeScript file is checked by exactly one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function project(configPath: string): { lib: string[]; files: string[] } {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, configPath),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(ts.flattenDiagnosticMessageText(d.messageText, '\n')),
    },
  );
  assert.ok(parsed, configPath);
  assert.deepEqual(parsed.errors, [], configPath);
  return {
    lib: (parsed.options.lib ?? []).map((l) => l.toLowerCase()),
    files: parsed.fileNames.map((f) => relative(ROOT, f)),
  };
}

const node = project('tsconfig.json');
const web = project('webview/tsconfig.json');

test('the node project has no DOM types; the webview project has them', () => {
  assert.deepEqual(
    node.lib.filter((l) => l.includes('dom')),
    [],
  );
  assert.ok(web.lib.some((l) => l.includes('dom')));
});

test('backend, src and webview files each sit in the right project, and no file is in both', () => {
  const inNode = new Set(node.files);
  const both = web.files.filter((f) => inNode.has(f));
  assert.deepEqual(both, []);
  assert.deepEqual(
    node.files.filter((f) => f.startsWith('webview/')),
    [],
  );
  for (const f of web.files) assert.match(f, /^(webview|test|bench)\//, f);
  assert.ok(node.files.some((f) => f.startsWith('backend/')));
  assert.ok(node.files.some((f) => f.startsWith('src/')));
  assert.ok(web.files.some((f) => f.startsWith('webview/')));
  assert.ok(web.files.some((f) => f.startsWith('test/webview/')));
});
