// `rft explorer --buffer postgres://... --run RUN`: join a distributed run as a rollout worker.
// SIGTERM / Ctrl-C: finish the current job, give back unstarted leases, exit. An HTTPS weight server
// is checked with --weights-ca FILE (a CA, host name checked) or --weights-pin SHA256 (default: the
// certificate sha256 the trainer recorded in the run). A trainer lost (stopped or silent) for
// --trainer-wait seconds (default 600, 0 = forever) ends the explorer with exit status 3.
import { command } from '../command.js';
import { DIST_FLAGS } from './distributed-flags.js';
import { distributedExplorer } from '../../coordinator/distributed/explorer.js';
import { DEFAULT_TRAINER_WAIT_S, TrainerLostError } from '../../coordinator/distributed/trainer-lost.js';
import { readRegularFile } from '../../core/regular-file.js';
import { checkRunId } from '../../core/run-id.js';

export const explorerCommand = command({
  name: 'explorer',
  summary: 'a rollout worker of a distributed run (any machine that reaches the database and the trainer)',
  flags: {
    ...DIST_FLAGS,
    batch: { type: 'number', description: 'jobs leased at a time' },
    'lease-ms': { type: 'number', value: 'MS', description: "how long a leased job stays this worker's" },
    'weights-cache': { type: 'string', value: 'DIR', description: 'where downloaded weights are kept' },
    'weights-ca': { type: 'string', value: 'PEM', description: "a CA the trainer's HTTPS certificate is checked with" },
    'weights-pin': {
      type: 'string',
      value: 'SHA256',
      description: "the trainer certificate's sha256 (default: the one the trainer recorded in the run)",
    },
    'trainer-wait': {
      type: 'number',
      value: 'S',
      description: `seconds a lost trainer (stopped, or silent) is waited for before this explorer exits with status 3 (default ${DEFAULT_TRAINER_WAIT_S}; 0: forever)`,
    },
  },
  run: async ({ flags }) => {
    const { buffer: url, run: runId } = flags;
    // The id names folders (WEIGHTS/RUN/vN): `../outside` is refused here, by its flag.
    checkRunId(runId, '--run');
    const caFile = flags['weights-ca'];
    const pin = flags['weights-pin'];
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
    const trainerWaitS = flags['trainer-wait'];
    if (trainerWaitS !== undefined && !(trainerWaitS >= 0)) {
      console.error(`--trainer-wait: seconds (0 = wait forever), got ${trainerWaitS}`);
      return 2;
    }
    const ac = new AbortController();
    const stop = () => (ac.signal.aborted ? process.exit(143) : ac.abort());
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    const r = await distributedExplorer({
      trainerWaitS,
      url,
      runId,
      signal: ac.signal,
      batch: flags.batch,
      leaseMs: flags['lease-ms'],
      cacheDir: flags['weights-cache'],
      tls: { ca, pin },
    }).catch((e: unknown) => {
      if (!(e instanceof TrainerLostError)) throw e;
      console.error(`rft explorer: ${e.message}`);
      return null;
    });
    if (!r) return 3; // its own status: the run is not done, its trainer is gone
    console.log(JSON.stringify({ kind: 'explorer_result', ...r }));
    return 0;
  },
});
