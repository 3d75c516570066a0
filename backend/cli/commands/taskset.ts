// `rft taskset validate FILE... [--domain D] [--split S] [--json]`: every bad record as
// `FILE:LINE: field 'X': message` (a Parquet / Arrow file's row as LINE), then a summary line; exit 1
// when any record was bad. A FILE may be a dataset folder (hub cache entry, split shards): --split.
import { InputError } from '../../core/errors.js';
import { command } from '../command.js';
import { formatTaskError, loadTaskset } from '../../buffer/taskset/load.js';
import { DOMAINS } from '../../buffer/taskset/schema.js';

export const tasksetValidateCommand = command({
  name: 'taskset validate',
  args: 'FILE...',
  summary:
    'check taskset files (JSONL, JSON, YAML, CSV, Parquet, Arrow; a dataset folder with --split): every bad record with file:line:field',
  flags: {
    domain: {
      type: 'string',
      choices: DOMAINS,
      description: 'the domain of records that name none (math if not given)',
    },
    split: {
      type: 'string',
      value: 'S',
      description: 'the split of a dataset folder (train, test, validation, …; CONFIG/SPLIT where configs share one)',
    },
    json: { type: 'boolean', description: 'one JSON line per file' },
  },
  run: async (a) => {
    if (a.positional.length === 0) throw new InputError(`usage: ${a.usage}`);
    const domain = a.flags.domain;
    const split = a.flags.split;
    let bad = 0;
    for (const file of a.positional) {
      let r: Awaited<ReturnType<typeof loadTaskset>>;
      try {
        r = await loadTaskset(file, { domain, ...(split !== undefined ? { split } : {}) });
      } catch (e) {
        // A file that cannot be read as a taskset (a FIFO, a device, UTF-16, too big) is one error; the others are still checked.
        if (e instanceof InputError) {
          bad++;
          if (a.flags.json) console.log(JSON.stringify({ file, error: e.message }));
          else console.log(e.message);
          continue;
        }
        // A split the dataset does not have, a path that is not there: the command line is wrong.
        const code = (e as NodeJS.ErrnoException).code;
        throw new InputError(code ? `cannot read it (${code})` : (e as Error).message, { file });
      }
      for (const n of r.notes ?? []) console.error(`note: ${n}`);
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
            ...(r.notes ? { notes: r.notes } : {}),
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
