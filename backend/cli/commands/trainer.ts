// `rft trainer --buffer postgres://... --run RUN`: the trainer of a distributed run; started again
// after a crash it resumes from its last checkpoint and buffer position. SIGTERM: stop after the step.
import { command, flagString } from '../command.js';
import { distributedTrainer } from '../../coordinator/distributed/trainer.js';

command({
  name: 'trainer',
  usage: 'trainer --buffer postgres://... --run RUN',
  summary: 'the trainer of a distributed run',
  run: async (args) => {
    const url = flagString(args, 'buffer');
    const runId = flagString(args, 'run');
    if (!url || !runId) {
      console.error('usage: rft trainer --buffer postgres://... --run RUN');
      return 2;
    }
    const ac = new AbortController();
    const stop = () => (ac.signal.aborted ? process.exit(143) : ac.abort());
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    const r = await distributedTrainer({ url, runId, signal: ac.signal });
    console.log(JSON.stringify({ kind: 'trainer_result', ...r }));
    return r.done ? 0 : 1;
  },
});
