// tfjs-core's Node entry (CommonJS) registers no gradients, and its ES-module files use
// extensionless and directory imports that Node cannot load. Bundle the gradient registrations
// (and the chained tensor methods) into one file; they register into tfjs' global registries,
// which every copy of tfjs-core shares. Runs on `npm install` (postinstall) and before builds/tests.
import { build } from 'esbuild';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
const core = dirname(require.resolve('@tensorflow/tfjs-core/package.json'));
const version = JSON.parse(readFileSync(join(core, 'package.json'), 'utf8')).version;
const out = join(root, 'vendor', `tfjs-core-extras-${version}.cjs`);
if (!existsSync(out) || statSync(out).size === 0) {
  mkdirSync(dirname(out), { recursive: true });
  await build({
    stdin: {
      contents: [
        `import '${join(core, 'dist/register_all_gradients.js')}';`,
        `import '${join(core, 'dist/public/chained_ops/register_all_chained_ops.js')}';`,
      ].join('\n'),
      resolveDir: root,
      loader: 'js',
    },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    outfile: out,
    logLevel: 'warning',
    legalComments: 'none',
  });
  console.error(`vendored tfjs-core gradients -> ${out}`);
}
