// `rft taskset validate FILE... [--domain D] [--json]`: every bad record as `FILE:LINE: field 'X': message`,
// then a summary line; exit 1 when any record was bad.
import { InputError } from '../../core/errors.js';
import { command } from '../command.js';
import { formatTaskError, loadTaskset } from '../../buffer/taskset/load.js';
import { DOMAINS } from '../../buffer/taskset/schema.js';

command({
  name: 'taskset validate',
  args: 'FILE...',
  summary: 'check taskset files (JSONL, JSON, YAML, CSV): every bad record with file:line:field',
  flags: {
    domain: {
      type: 'string',
      choices: DOMAINS,
      description: 'the domain of records that name none (math if not given)',
    },
    json: { type: 'boolean', description: 'one JSON line per file' },
  },
  run: async (a) => {
    if (a.positional.length === 0) throw new InputError(`usage: ${a.usage}`);
    const domain = a.flags.domain;
    let bad = 0;
    for (const file of a.positional) {
      const r = await loadTaskset(file, { domain });
      bad += r.errors.length;
      if (a.flags.json) {
        console.log(
          JSON.stringify({
            file,
            valid: r.tasks.length,
            invalid: r.errors.length,
            records: r.records,
            errors: r.errors,
            ...(r.warnings ? { warnings: r.warnings } : {}),
          }),
        );
        continue;
      }
      for (const w of r.warnings ?? []) console.log(`${formatTaskError(w)} (warning)`);
      for (const e of r.errors) console.log(formatTaskError(e));
      const recs = r.records === 1 ? 'record' : 'records';
      console.log(
        `${file}: ${r.tasks.length} valid, ${r.errors.length} error${r.errors.length === 1 ? '' : 's'} (${r.records} ${recs})`,
      );
    }
    return bad > 0 ? 1 : 0;
  },
});
