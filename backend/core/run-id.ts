// A run id names folders (.rft/runs/ID, WEIGHTS/ID/vN) and database rows: letters, digits, '.', '_'
// and '-' only, not starting with '.', so that `--run ../../outside/pwn` (or `..`) cannot place a
// run's files outside the folder it belongs in.
import { InputError } from './errors.js';

const RUN_ID = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

/** ID, or an InputError naming FIELD (a flag such as `--run`) when it is not a valid run id. */
export function checkRunId(id: string, field = 'run id'): string {
  if (!RUN_ID.test(id))
    throw new InputError(`'${id}' is not a run id: 1 to 128 letters, digits, '.', '_' or '-', not starting with '.'`, {
      field,
    });
  return id;
}
