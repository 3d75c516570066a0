// Child process for the multi-process storage tests (run with `node --import tsx`).
//   writer URL PREFIX MAX_BATCHES : appends batches of 64, prints `ack B` after each commit
//   reader URL NAME               : takes FIFO batches of 8, prints `took id,id,...`; exits when run state 'stop' is set and nothing is left
import { openStore } from '../../backend/buffer/storage/registry.js';
import { makeExp } from './storage-helpers.js';

const [mode, url, a, b] = process.argv.slice(2);
const store = await openStore(url!);
const out = (s: string) => process.stdout.write(s + '\n');

if (mode === 'writer') {
  const prefix = a!;
  const max = Number(b);
  for (let batch = 0; batch < max; batch++) {
    const exps = Array.from({ length: 64 }, (_, i) =>
      makeExp(`${prefix}-${batch}-${i}`, { groupId: `${prefix}-${batch}`, metadata: { batch } }),
    );
    await store.appendExperiences(exps);
    out(`ack ${batch}`);
  }
} else if (mode === 'reader') {
  const name = a!;
  let step = 0;
  for (;;) {
    const r = await store.takeFifo({ n: 8, source: 'usual', consumer: name, step });
    if (r.experiences.length) {
      step++;
      out(`took ${r.experiences.map((e) => e.id).join(',')}`);
      continue;
    }
    if (await store.getState('test', 'stop')) {
      const left = await store.availability('fifo', { source: 'usual' });
      if (left.ready < 8) break;
    }
    await new Promise((res) => setTimeout(res, 20));
  }
} else throw new Error(`unknown mode ${mode}`);
await store.close();
out('done');
