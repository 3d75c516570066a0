// `rft serve`: the backend the VS Code extension launches (JSON-RPC over stdio), or a server on
// a TCP port that an editor attaches to. TCP needs the token the server writes at each start to a
// file only the user can read; a host other than loopback needs --allow-remote (and is warned about).
import { InputError } from '../../core/errors.js';
import { resolve } from 'node:path';
import { command } from '../command.js';
import { serveStdio, serveTcp } from '../../server/transports.js';
import { wireDeps } from '../../server/wire.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../server/framing.js';
import { defaultTokenFile, isLoopback, makeToken, removeTokenFile, writeTokenFile } from '../../server/token.js';
import { logger } from '../../core/log.js';
import { checkRunId } from '../../core/run-id.js';

const log = logger('serve');

export const serveCommand = command({
  name: 'serve',
  summary: 'JSON-RPC backend for the VS Code extension (stdio by default; TCP with a token)',
  flags: {
    workspace: { type: 'string', value: 'DIR', description: 'the workspace folder (default: the current folder)' },
    buffer: { type: 'string', value: 'PATH', description: 'the buffer the editor opens first' },
    run: { type: 'string', value: 'ID', description: 'or the run whose buffer the editor opens first' },
    port: { type: 'number', description: 'serve on this TCP port (0: any free port) instead of stdio' },
    host: { type: 'string', value: 'H', description: 'the address to listen on, with --port (default: 127.0.0.1)' },
    'allow-remote': { type: 'boolean', description: 'with --port: allow a --host other machines reach' },
    'token-file': { type: 'string', value: 'FILE', description: 'with --port: where the token is written' },
    'max-message-mb': {
      type: 'number',
      default: DEFAULT_MAX_MESSAGE_BYTES / 2 ** 20,
      description: 'the largest JSON-RPC message taken, in MiB',
    },
  },
  async run({ flags }) {
    const workspace = resolve(flags.workspace ?? process.cwd());
    if (flags.run !== undefined) checkRunId(flags.run, '--run');
    const maxMb = flags['max-message-mb'];
    if (!(maxMb > 0)) throw new InputError(`--max-message-mb must be positive, got ${maxMb}`);
    const maxBytes = Math.floor(maxMb * 2 ** 20);
    const port = flags.port;
    const host = flags.host ?? '127.0.0.1';
    if (
      port === undefined &&
      (flags.host !== undefined || flags['token-file'] !== undefined || flags['allow-remote'])
    ) {
      throw new InputError(
        '--host, --token-file and --allow-remote go with --port (without --port the server uses stdio)',
      );
    }
    if (port !== undefined && !isLoopback(host)) {
      if (!flags['allow-remote']) {
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
      defaultBuffer: flags.buffer ? { path: resolve(flags.buffer) } : flags.run ? { runId: flags.run } : undefined,
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
      port,
      token,
      maxBytes,
      onListening: (p) => {
        tokenFile = resolve(flags['token-file'] ?? defaultTokenFile(workspace, p));
        writeTokenFile(tokenFile, token);
        // The one line on stdout in TCP mode: which port was bound and where its token is.
        process.stdout.write(JSON.stringify({ listening: p, tokenFile }) + '\n');
      },
    });
    return 0;
  },
});
