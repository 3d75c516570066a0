// Where RFT Studio's own files are (configs, vendor/, the native addon, worker entry points, the
// CLI), found the same way from the TypeScript source (backend/**), the bundles (dist/backend/*.mjs)
// and an installed .vsix (extension/dist/...): walk up from this module to the folder whose
// package.json is ours. Every module that needs a package file asks here, so moving a file or
// bundling it never changes what a relative `../../..` points at.
import { InfrastructureError } from './errors.js';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACKAGE_NAME = 'rft-studio';

const here = fileURLToPath(import.meta.url);
let root: string | undefined;

/** Walk up from `start` to the first folder with a package.json named `name`. */
export function findPackageRoot(start: string, name = PACKAGE_NAME): string | undefined {
  let dir = start;
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name === name) return dir;
      } catch {
        // An unreadable package.json of some other project: keep walking up.
      }
    }
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/** The package's root folder (the one holding package.json, configs/, dist/, vendor/). */
export function packageRoot(): string {
  if (root) return root;
  const found = process.env.RFT_PACKAGE_ROOT ?? findPackageRoot(dirname(here));
  if (!found) throw new InfrastructureError(`cannot find RFT Studio's package.json above ${here}`);
  return (root = found);
}

/** A file of the package, by its path from the package root (e.g. `configs/main.yaml`). */
export function packageFile(...parts: string[]): string {
  return join(packageRoot(), ...parts);
}

/** True when this process runs the TypeScript sources (tsx: dev, tests), false in a bundle. */
export const fromSource = here.endsWith('.ts');

/**
 * Node arguments that run the `rft` CLI the way this process runs: the TypeScript source through
 * tsx in a checkout, the CLI bundle otherwise (also from `serve.mjs`, which is not the CLI).
 */
export function cliNodeArgs(): string[] {
  if (process.env.RFT_CLI) return [process.env.RFT_CLI];
  if (fromSource) return ['--import', import.meta.resolve('tsx'), packageFile('backend', 'cli.ts')];
  return [packageFile('dist', 'backend', 'cli.mjs')];
}
