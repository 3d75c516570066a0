// `rft trainer --buffer postgres://... --run RUN`: the trainer of a distributed run; started again
// after a crash it resumes from its last checkpoint and buffer position. SIGTERM: stop after the step.
// It serves its weights over HTTP (--weights-port, --weights-host: one of this machine's addresses, or
// --weights-host-forwarded for one forwarded to it) unless --no-serve-weights, and
// writes metrics.jsonl, report.html and summary.json to --out (default WEIGHTS/RUN on this host).
// --weights-tls-cert / --weights-tls-key: HTTPS (explorers pin the certificate or check it with a CA).
// --weights DIR: this host's weights folder when it is not the one the coordinator recorded.
// One trainer per run: a second one is refused while the first renews its lease (or for 120 s after it
// stopped renewing); --take-over takes the lease anyway, and the other trainer stops at its next write.
import { command } from '../command.js';
import { DIST_FLAGS } from './distributed-flags.js';
import { distributedTrainer } from '../../coordinator/placement/distributed.js';
import { advertisedHostProblem } from '../../coordinator/distributed/advertised-host.js';
import { readRegularFile } from '../../core/regular-file.js';
import { checkRunId } from '../../core/run-id.js';

export const trainerCommand = command({
  name: 'trainer',
  summary: 'the trainer of a distributed run (serves its weights to the explorers over HTTP)',
  flags: {
    ...DIST_FLAGS,
    weights: {
      type: 'string',
      value: 'DIR',
      description: "this host's weights folder, when not the one the coordinator recorded",
    },
    'weights-port': {
      type: 'number',
      default: 0,
      description: 'the port the weights are served on (0: any free port)',
    },
    'weights-host': {
      type: 'string',
      value: 'ADDR',
      description: "the address explorers fetch the weights from (one of this machine's)",
    },
    'weights-host-forwarded': {
      type: 'boolean',
      description: '--weights-host is forwarded to this machine (not checked as its own)',
    },
    'weights-tls-cert': {
      type: 'string',
      value: 'PEM',
      description: 'serve the weights over HTTPS with this certificate',
    },
    'weights-tls-key': { type: 'string', value: 'PEM', description: 'and this key' },
    'no-serve-weights': {
      type: 'boolean',
      description: 'do not serve the weights (explorers read them from a shared folder)',
    },
    out: {
      type: 'string',
      value: 'DIR',
      description: 'where metrics.jsonl, report.html and summary.json go (default: WEIGHTS/RUN)',
    },
    'take-over': { type: 'boolean', description: "take the run's trainer lease from another trainer" },
  },
  run: async ({ flags }) => {
    const { buffer: url, run: runId } = flags;
    // The id names folders (WEIGHTS/RUN/vN): `../outside` is refused here, by its flag.
    checkRunId(runId, '--run');
    const port = flags['weights-port'];
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      console.error(`--weights-port: a port number 0-65535 (0: any free port), got '${port}'`);
      return 2;
    }
    const certFile = flags['weights-tls-cert'];
    const keyFile = flags['weights-tls-key'];
    if (!certFile !== !keyFile || (certFile && flags['no-serve-weights'])) {
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
    const host = flags['weights-host'];
    if (host !== undefined && !flags['no-serve-weights'] && !flags['weights-host-forwarded']) {
      const problem = await advertisedHostProblem(host);
      if (problem) {
        console.error(problem);
        return 2;
      }
    }
    const serveWeights = flags['no-serve-weights'] ? (false as const) : { port, host, tls };
    const ac = new AbortController();
    const stop = () => (ac.signal.aborted ? process.exit(143) : ac.abort());
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    const r = await distributedTrainer({
      url,
      runId,
      signal: ac.signal,
      serveWeights,
      outDir: flags.out,
      weightsDir: flags.weights,
      takeOver: flags['take-over'],
    });
    console.log(JSON.stringify({ kind: 'trainer_result', ...r }));
    return r.done ? 0 : 1;
  },
});
