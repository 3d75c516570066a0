// `rft explorer-process RUN_DIR`: started by the coordinator of a run with `placement: checkpoint`;
// SIGTERM ends it after its current step.
import { command } from '../command.js';
import { explorerProcess } from '../../coordinator/explorer-process.js';
import { PROCESS_FLAGS, refusedExit } from './process-flags.js';

export const explorerProcessCommand = command({
  name: 'explorer-process',
  args: 'RUN_DIR',
  summary: 'the explorer process of a run (started by `rft run`; not for direct use)',
  flags: PROCESS_FLAGS,
  // The name before 2026-11-27 ('worker' named nine things): kept so a script that calls it still runs, with a warning.
  renamedFrom: 'explorer-worker',
  run: async ({ positional, flags, usage }) => {
    const runDir = positional[0];
    if (!runDir) {
      console.error(`usage: ${usage}`);
      return 2;
    }
    const ac = new AbortController();
    const stop = () => (ac.signal.aborted ? process.exit(143) : ac.abort());
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    // A refusal (config or data) exits EXIT_REFUSED: the coordinator fails the run at once, without a restart that meets it again.
    return refusedExit(() =>
      explorerProcess({ runDir, runId: flags['run-id'], store: flags.store, stage: flags.stage }, ac.signal),
    );
  },
});
