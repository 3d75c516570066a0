// `rft serve` as its own entry (bundled to dist/backend/serve.mjs): the extension launches this, so
// the backend it starts loads only the server and what it uses, not every CLI command.
import { commands, parseArgs } from '../cli/command.js';
import '../cli/commands/serve.js';

const c = commands.get('serve');
try {
  process.exitCode = await c.run(parseArgs(process.argv.slice(2), c.booleanFlags));
} catch (err) {
  process.stderr.write(`rft serve: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
}
