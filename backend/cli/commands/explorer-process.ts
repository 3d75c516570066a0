// `rft explorer-process RUN_DIR`: started by the coordinator of a run with `placement: checkpoint`;
// SIGTERM ends it after its current step.
import { command, flagNumber, flagString } from '../command.js';
import { explorerProcess } from '../../coordinator/explorer-process.js';

const main = command({
  name: 'explorer-process',
  usage: 'explorer-process RUN_DIR --run-id ID --store URL --stage N',
  summary: 'the explorer process of a run (started by `rft run`; not for direct use)',
  run: async (args) => {
    const runDir = args.positional[0];
    const runId = flagString(args, 'run-id');
    const store = flagString(args, 'store');
    if (!runDir || !runId || !store) {
      console.error('usage: rft explorer-process RUN_DIR --run-id ID --store URL --stage N');
      return 2;
    }
    const ac = new AbortController();
    const stop = () => (ac.signal.aborted ? process.exit(143) : ac.abort());
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    return explorerProcess({ runDir, runId, store, stage: flagNumber(args, 'stage', 0) }, ac.signal);
  },
});

// The name before 2026-11-27 ('worker' named nine things): kept so a script that calls it still runs, with a warning.
command({
  name: 'explorer-worker',
  usage: 'explorer-worker RUN_DIR ...',
  summary: `old name of explorer-process (warns)`,
  run: (args) => {
    console.error("warning: 'rft explorer-worker' is now 'rft explorer-process'");
    return main.run(args);
  },
});
