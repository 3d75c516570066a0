// `rft explorer --buffer postgres://... --run RUN`: join a distributed run as a rollout worker.
// SIGTERM / Ctrl-C: finish the current job, give back unstarted leases, exit. An HTTPS weight server
// is checked with --weights-ca FILE (a CA, host name checked) or --weights-pin SHA256 (default: the
// certificate sha256 the trainer recorded in the run).
import { command, flagNumber, flagString } from '../command.js';
import { distributedExplorer } from '../../coordinator/distributed/explorer.js';
import { readRegularFile } from '../../core/regular-file.js';
import { checkRunId } from '../../core/run-id.js';

command({
  name: 'explorer',
  usage:
    'explorer --buffer postgres://... --run RUN [--batch N] [--lease-ms MS] [--weights-cache DIR] [--weights-ca PEM | --weights-pin SHA256]',
  summary: 'a rollout worker of a distributed run (any machine that reaches the database and the trainer)',
  flags: ['buffer', 'run', 'batch', 'lease-ms', 'weights-cache', 'weights-ca', 'weights-pin'],
  run: async (args) => {
    const url = flagString(args, 'buffer');
    const runId = flagString(args, 'run');
    if (!url || !runId) {
      console.error(
        'usage: rft explorer --buffer postgres://... --run RUN [--batch N] [--lease-ms MS] [--weights-cache DIR]',
      );
      return 2;
    }
    // The id names folders (WEIGHTS/RUN/vN): `../outside` is refused here, by its flag.
    checkRunId(runId, '--run');
    const caFile = flagString(args, 'weights-ca');
    const pin = flagString(args, 'weights-pin');
    if (caFile && pin) {
      console.error('--weights-ca and --weights-pin: one or the other');
      return 2;
    }
    if (pin !== undefined && !/^[0-9a-fA-F]{64}$/.test(pin.replace(/:/g, ''))) {
      console.error(`--weights-pin: a certificate's sha256 (64 hex digits, colons allowed), got '${pin}'`);
      return 2;
    }
    let ca: string | undefined;
    try {
      ca = caFile ? readRegularFile(caFile, 'utf8', 1 << 20) : undefined;
    } catch (e) {
      console.error(`--weights-ca: ${(e as Error).message}`);
      return 2;
    }
    const ac = new AbortController();
    const stop = () => (ac.signal.aborted ? process.exit(143) : ac.abort());
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    const r = await distributedExplorer({
      url,
      runId,
      signal: ac.signal,
      batch: args.flags.batch !== undefined ? flagNumber(args, 'batch', 1) : undefined,
      leaseMs: args.flags['lease-ms'] !== undefined ? flagNumber(args, 'lease-ms', 10_000) : undefined,
      cacheDir: flagString(args, 'weights-cache'),
      tls: { ca, pin },
    });
    console.log(JSON.stringify({ kind: 'explorer_result', ...r }));
    return 0;
  },
});
