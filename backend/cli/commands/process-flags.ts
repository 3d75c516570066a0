// The flags a run's coordinator starts `rft explorer-process` and `rft trainer-process` with
// (coordinator/process-context.ts processArgv), and how they exit on a refusal.
import { errorKind } from '../../core/errors.js';
import { EXIT_REFUSED } from '../../coordinator/processes.js';
export const PROCESS_FLAGS = {
  'run-id': { type: 'string', value: 'ID', required: true, description: 'the run' },
  store: { type: 'string', value: 'URL', required: true, description: "the run's buffer" },
  stage: { type: 'number', default: 0, description: 'the stage the process runs' },
} as const;

/** Runs a process command; a refusal of its config or data (an InputError) is printed and exits EXIT_REFUSED. */
export async function refusedExit(fn: () => Promise<number>): Promise<number> {
  try {
    return await fn();
  } catch (e) {
    if (errorKind(e) !== 'input') throw e;
    console.error(`rft: ${(e as Error).message}`);
    return EXIT_REFUSED;
  }
}
