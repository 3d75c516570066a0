// `npm run bench -- NAME [args]`: runs bench/NAME.ts, which prints one JSON line per figure:
// {"bench","figure","unit","value","baseline","baseline_value","ratio"}.
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const name = process.argv[2];
const available = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && !['index.ts', 'report.ts', 'rl-reference-models.ts'].includes(f))
  .map((f) => f.replace(/\.ts$/, ''));
if (!name || !existsSync(join(here, `${name}.ts`))) {
  console.error(`usage: npm run bench -- <${available.join('|')}> [args]`);
  process.exit(2);
}
process.argv.splice(2, 1);
await import(pathToFileURL(join(here, `${name}.ts`)).href);
