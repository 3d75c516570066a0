// `rft serve`: the backend the VS Code extension launches (JSON-RPC over stdio), or a server on
// a TCP port that an editor on another machine attaches to.
import { resolve } from 'node:path';
import { command, flagNumber, flagString } from '../command.js';
import { serveStdio, serveTcp } from '../../server/transports.js';
import { wireDeps } from '../../server/wire.js';

command({
  name: 'serve',
  usage: 'serve [--workspace DIR] [--buffer PATH|--run ID] [--port N --host H]',
  summary: 'JSON-RPC backend for the VS Code extension (stdio by default)',
  async run(args) {
    const workspace = resolve(flagString(args, 'workspace') ?? process.cwd());
    const bufferPath = flagString(args, 'buffer');
    const runId = flagString(args, 'run');
    const deps = await wireDeps({
      workspace,
      defaultBuffer: bufferPath ? { path: resolve(bufferPath) } : runId ? { runId } : undefined,
    });
    const port = flagString(args, 'port');
    if (port !== undefined) {
      await serveTcp(deps, flagString(args, 'host') ?? '127.0.0.1', flagNumber(args, 'port', 0), (p) => {
        // The one line on stdout in TCP mode: tells a launcher which port was bound.
        process.stdout.write(JSON.stringify({ listening: p }) + '\n');
      });
    } else {
      await serveStdio(deps);
    }
    return 0;
  },
});
