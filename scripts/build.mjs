// Bundles the three programs separately with esbuild: the extension (CommonJS, for the VS Code
// extension host), the webviews (browser IIFE) and the backend CLI (ESM for Node).
import { build } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BACKEND_ENTRIES } from './backend-entries.mjs';

const watch = process.argv.includes('--watch');
const common = { bundle: true, sourcemap: true, logLevel: 'warning', minify: false };

const jobs = [];
if (existsSync('src/extension.ts')) {
  jobs.push(
    build({
      ...common,
      entryPoints: ['src/extension.ts'],
      outfile: 'dist/extension.cjs',
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      external: ['vscode'],
      // jsonc-parser's `main` is a UMD build whose factory requires its parts at run time, which a
      // bundle cannot follow: its ESM build is bundled instead (the backend keeps packages external).
      alias: { 'jsonc-parser': 'jsonc-parser/lib/esm/main.js' },
    }),
  );
}
if (existsSync('webview')) {
  const entries = readdirSync('webview', { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join('webview', d.name, 'main.ts')))
    .map((d) => ({ in: join('webview', d.name, 'main.ts'), out: d.name }));
  if (entries.length) {
    jobs.push(
      build({
        ...common,
        entryPoints: entries,
        outdir: 'dist/webview',
        platform: 'browser',
        format: 'iife',
        target: 'es2022',
        loader: { '.css': 'text' },
      }),
    );
  }
}
const backend = (entryPoints) =>
  build({
    ...common,
    entryPoints,
    outdir: 'dist/backend',
    outExtension: { '.js': '.mjs' },
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Native modules, wasm binaries and optional engines stay in node_modules.
    packages: 'external',
  });
for (const [name, entry] of Object.entries(BACKEND_ENTRIES)) jobs.push(backend({ [name]: entry }));
// `rft serve` on its own (what the extension launches): loads only the server's modules.
if (existsSync('backend/serve.ts')) jobs.push(backend({ serve: 'backend/serve.ts' }));
// Every bundle is attempted even when one fails, so one broken program does not hide the others.
const failed = (await Promise.allSettled(jobs)).filter((r) => r.status === 'rejected');
if (failed.length) {
  for (const f of failed) console.error(String(f.reason?.message ?? f.reason).split('\n')[0]);
  process.exitCode = 1;
}
// Webview assets: each webview's style.css (after webview/shared/base.css) as dist/webview/NAME.css,
// and the codicon font + stylesheet (the webviews' CSP only allows files under dist/webview).
if (existsSync('webview')) {
  mkdirSync('dist/webview/codicons', { recursive: true });
  const base = existsSync('webview/shared/base.css') ? readFileSync('webview/shared/base.css', 'utf8') : '';
  for (const d of readdirSync('webview', { withFileTypes: true })) {
    const css = join('webview', d.name, 'style.css');
    if (d.isDirectory() && existsSync(join('webview', d.name, 'main.ts'))) {
      writeFileSync(
        join('dist/webview', `${d.name}.css`),
        base + '\n' + (existsSync(css) ? readFileSync(css, 'utf8') : ''),
      );
    }
  }
  for (const f of ['codicon.css', 'codicon.ttf'])
    copyFileSync(join('node_modules/@vscode/codicons/dist', f), join('dist/webview/codicons', f));
}
if (!watch && !failed.length) console.log('built dist/');
