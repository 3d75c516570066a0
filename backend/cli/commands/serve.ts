// `rft serve`: the backend the VS Code extension launches (JSON-RPC over stdio), or a server on
// a TCP port that an editor attaches to. TCP needs the token the server writes at each start to a
// file only the user can read; a host other than loopback needs --allow-remote (and is warned about).
import { InputError } from '../../core/errors.js';
import { resolve } from 'node:path';
import { command, flagNumber, flagString } from '../command.js';
import { serveStdio, serveTcp } from '../../server/transports.js';
import { wireDeps } from '../../server/wire.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../server/framing.js';
import { defaultTokenFile, isLoopback, makeToken, removeTokenFile, writeTokenFile } from '../../server/token.js';
import { logger } from '../../core/log.js';
import { checkRunId } from '../../core/run-id.js';

const log = logger('serve');

command({
  name: 'serve',
  usage:
    'serve [--workspace DIR] [--buffer PATH|--run ID] [--port N [--host H] [--allow-remote] [--token-file FILE]] [--max-message-mb N]',
  summary: 'JSON-RPC backend for the VS Code extension (stdio by default; TCP with a token)',
  flags: ['workspace', 'buffer', 'run', 'port', 'host', 'token-file', 'max-message-mb'],
  booleanFlags: ['allow-remote'],
  async run(args) {
    const workspace = resolve(flagString(args, 'workspace') ?? process.cwd());
    const bufferPath = flagString(args, 'buffer');
    const runId = flagString(args, 'run');
    if (runId !== undefined) checkRunId(runId, '--run');
    const maxMb = flagNumber(args, 'max-message-mb', DEFAULT_MAX_MESSAGE_BYTES / 2 ** 20);
    if (!(maxMb > 0)) throw new InputError(`--max-message-mb must be positive, got ${maxMb}`);
    const maxBytes = Math.floor(maxMb * 2 ** 20);
    const port = flagString(args, 'port');
    const host = flagString(args, 'host') ?? '127.0.0.1';
    if (
      port === undefined &&
      (args.flags.host !== undefined || args.flags['token-file'] !== undefined || args.flags['allow-remote'])
    ) {
      throw new InputError(
        '--host, --token-file and --allow-remote go with --port (without --port the server uses stdio)',
      );
    }
    if (port !== undefined && !isLoopback(host)) {
      if (!args.flags['allow-remote']) {
        throw new InputError(
          `--host ${host} would accept connections from other machines; add --allow-remote to mean it (prefer an SSH tunnel to 127.0.0.1)`,
        );
      }
      log.warn(
        `serving on ${host}: reachable from other machines; the token is the only protection and the traffic is not encrypted`,
      );
    }
    const deps = await wireDeps({
      workspace,
      defaultBuffer: bufferPath ? { path: resolve(bufferPath) } : runId ? { runId } : undefined,
    });
    if (port === undefined) {
      await serveStdio(deps, { maxBytes });
      return 0;
    }
    const token = makeToken();
    let tokenFile: string | undefined;
    const cleanup = () => tokenFile && removeTokenFile(tokenFile);
    process.once('exit', cleanup);
    for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => process.exit(0));
    await serveTcp(deps, {
      host,
      port: flagNumber(args, 'port', 0),
      token,
      maxBytes,
      onListening: (p) => {
        tokenFile = resolve(flagString(args, 'token-file') ?? defaultTokenFile(workspace, p));
        writeTokenFile(tokenFile, token);
        // The one line on stdout in TCP mode: which port was bound and where its token is.
        process.stdout.write(JSON.stringify({ listening: p, tokenFile }) + '\n');
      },
    });
    return 0;
  },
});
