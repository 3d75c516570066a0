// `rft taskset validate FILE... [--domain D] [--json]`: every bad record as `FILE:LINE: field 'X': message`,
// then a summary line; exit 1 when any record was bad.
import { InputError } from '../../core/errors.js';
import type { Domain } from '../../core/types.js';
import { command, flagString } from '../command.js';
import { formatTaskError, loadTaskset } from '../../buffer/taskset/load.js';
import { DOMAINS } from '../../buffer/taskset/schema.js';

command({
  name: 'taskset validate',
  flags: ['domain'],
  usage: 'taskset validate FILE... [--domain D] [--json]',
  summary: 'check taskset files (JSONL, JSON, YAML, CSV): every bad record with file:line:field',
  booleanFlags: ['json'],
  run: async (a) => {
    if (a.positional.length === 0) throw new InputError('usage: rft taskset validate FILE... [--domain D] [--json]');
    const domain = flagString(a, 'domain') as Domain | undefined;
    if (domain !== undefined && !DOMAINS.includes(domain))
      throw new InputError(`--domain must be one of ${DOMAINS.join(', ')}, got '${domain}'`);
    let bad = 0;
    for (const file of a.positional) {
      let r: Awaited<ReturnType<typeof loadTaskset>>;
      try {
        r = await loadTaskset(file, { domain });
      } catch (e) {
        // A file that cannot be read as a taskset (a FIFO, a device, UTF-16, too big) is one error; the others are still checked.
        if (!(e instanceof InputError)) throw e;
        bad++;
        if (a.flags.json) console.log(JSON.stringify({ file, error: e.message }));
        else console.log(e.message);
        continue;
      }
      bad += r.errors.length;
      if (a.flags.json) {
        console.log(
          JSON.stringify({
            file,
            valid: r.tasks.length,
            invalid: r.errors.length,
            records: r.records,
            errors: r.errors,
          }),
        );
        continue;
      }
      for (const e of r.errors) console.log(formatTaskError(e));
      const recs = r.records === 1 ? 'record' : 'records';
      console.log(
        `${file}: ${r.tasks.length} valid, ${r.errors.length} error${r.errors.length === 1 ? '' : 's'} (${r.records} ${recs})`,
      );
    }
    return bad > 0 ? 1 : 0;
  },
});
