#!/usr/bin/env node
// The `rft` command: runs the bundled backend CLI (built by `npm run build`), or the TypeScript source through tsx in a checkout.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bundled = join(root, 'dist', 'backend', 'cli.mjs');
if (existsSync(bundled) && !process.env.RFT_FROM_SOURCE) {
  await import(pathToFileURL(bundled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, 'backend', 'cli.ts')).href);
}
