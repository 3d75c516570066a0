// `rft trainer --buffer postgres://... --run RUN`: the trainer of a distributed run; started again
// after a crash it resumes from its last checkpoint and buffer position. SIGTERM: stop after the step.
// It serves its weights over HTTP (--weights-port, --weights-host: one of this machine's addresses, or
// --weights-host-forwarded for one forwarded to it) unless --no-serve-weights, and
// writes metrics.jsonl, report.html and summary.json to --out (default WEIGHTS/RUN on this host).
// --weights-tls-cert / --weights-tls-key: HTTPS (explorers pin the certificate or check it with a CA).
// --weights DIR: this host's weights folder when it is not the one the coordinator recorded.
// One trainer per run: a second one is refused while the first renews its lease (or for 120 s after it
// stopped renewing); --take-over takes the lease anyway, and the other trainer stops at its next write.
import { command, flagNumber, flagString } from '../command.js';
import { distributedTrainer } from '../../coordinator/placement/distributed.js';
import { advertisedHostProblem } from '../../coordinator/distributed/advertised-host.js';
import { readRegularFile } from '../../core/regular-file.js';
import { checkRunId } from '../../core/run-id.js';

const usage =
  'trainer --buffer postgres://... --run RUN [--weights DIR] [--weights-port N] [--weights-host ADDR [--weights-host-forwarded]] [--weights-tls-cert PEM --weights-tls-key PEM] [--no-serve-weights] [--out DIR] [--take-over]';

command({
  name: 'trainer',
  usage,
  summary: 'the trainer of a distributed run (serves its weights to the explorers over HTTP)',
  booleanFlags: ['no-serve-weights', 'take-over', 'weights-host-forwarded'],
  flags: ['buffer', 'run', 'weights-port', 'weights-host', 'out', 'weights', 'weights-tls-cert', 'weights-tls-key'],
  run: async (args) => {
    const url = flagString(args, 'buffer');
    const runId = flagString(args, 'run');
    if (!url || !runId) {
      console.error(`usage: rft ${usage}`);
      return 2;
    }
    // The id names folders (WEIGHTS/RUN/vN): `../outside` is refused here, by its flag.
    checkRunId(runId, '--run');
    const port = args.flags['weights-port'] !== undefined ? flagNumber(args, 'weights-port', 0) : 0;
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      console.error(
        `--weights-port: a port number 0-65535 (0: any free port), got '${String(args.flags['weights-port'])}'`,
      );
      return 2;
    }
    const certFile = flagString(args, 'weights-tls-cert');
    const keyFile = flagString(args, 'weights-tls-key');
    if (!certFile !== !keyFile || (certFile && args.flags['no-serve-weights'])) {
      console.error('--weights-tls-cert and --weights-tls-key: both or neither, and not with --no-serve-weights');
      return 2;
    }
    let tls;
    try {
      tls =
        certFile && keyFile
          ? { cert: readRegularFile(certFile, 'utf8', 1 << 20), key: readRegularFile(keyFile, 'utf8', 1 << 20) }
          : undefined;
    } catch (e) {
      console.error(`--weights-tls-cert / --weights-tls-key: ${(e as Error).message}`);
      return 2;
    }
    const host = flagString(args, 'weights-host');
    if (host !== undefined && !args.flags['no-serve-weights'] && !args.flags['weights-host-forwarded']) {
      const problem = await advertisedHostProblem(host);
      if (problem) {
        console.error(problem);
        return 2;
      }
    }
    const serveWeights = args.flags['no-serve-weights'] ? (false as const) : { port, host, tls };
    const ac = new AbortController();
    const stop = () => (ac.signal.aborted ? process.exit(143) : ac.abort());
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    const r = await distributedTrainer({
      url,
      runId,
      signal: ac.signal,
      serveWeights,
      outDir: flagString(args, 'out'),
      weightsDir: flagString(args, 'weights'),
      takeOver: Boolean(args.flags['take-over']),
    });
    console.log(JSON.stringify({ kind: 'trainer_result', ...r }));
    return r.done ? 0 : 1;
  },
});
