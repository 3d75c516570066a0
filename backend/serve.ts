// `rft serve` as its own entry (bundled to dist/backend/serve.mjs): the extension launches this, so
// the backend it starts loads only the server and what it uses, not every CLI command.
import { commands, exitCodeOf, parseFor } from './cli/command.js';
import './cli/commands/serve.js';

const c = commands.get('serve');
try {
  process.exitCode = await c.run(parseFor(c, process.argv.slice(2)));
} catch (err) {
  process.stderr.write(`rft serve: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = exitCodeOf(err);
}
