// Bundles the three programs separately with esbuild: the extension (CommonJS, for the VS Code
// extension host), the webviews (browser IIFE) and the backend CLI (ESM for Node).
import { build } from 'esbuild';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const watch = process.argv.includes('--watch');
const common = { bundle: true, sourcemap: true, logLevel: 'warning', minify: false };

const jobs = [];
if (existsSync('src/extension.ts')) {
  jobs.push(build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.cjs',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode'],
  }));
}
if (existsSync('webview')) {
  const entries = readdirSync('webview', { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join('webview', d.name, 'main.ts')))
    .map((d) => ({ in: join('webview', d.name, 'main.ts'), out: d.name }));
  if (entries.length) {
    jobs.push(build({
      ...common,
      entryPoints: entries,
      outdir: 'dist/webview',
      platform: 'browser',
      format: 'iife',
      target: 'es2022',
      loader: { '.css': 'text' },
    }));
  }
}
jobs.push(build({
  ...common,
  entryPoints: { cli: 'backend/cli.ts' },
  outdir: 'dist/backend',
  outExtension: { '.js': '.mjs' },
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Native modules, wasm binaries and optional engines stay in node_modules.
  packages: 'external',
}));
await Promise.all(jobs);
if (!watch) console.log('built dist/');
