// `rft serve` as its own entry (bundled to dist/backend/serve.mjs): the extension launches this, so
// the backend it starts loads only the server and what it uses, not every CLI command.
import { exitCodeOf, parseFor } from './cli/command.js';
import { serveCommand as c } from './cli/commands/serve.js';

try {
  process.exitCode = await c.run(parseFor(c, process.argv.slice(2)));
} catch (err) {
  process.stderr.write(`rft serve: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = exitCodeOf(err);
}
