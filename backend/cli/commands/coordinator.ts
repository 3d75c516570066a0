// `rft coordinator CONFIG --buffer postgres://... --run RUN --weights DIR|s3://BUCKET/PREFIX [--watch]`:
// create a distributed run in PostgreSQL; with --watch, print the workers every few seconds until it
// is done. With s3://, the run keeps its weights in S3-compatible object storage (--s3-endpoint,
// --s3-region; credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, never stored).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { command, flagNumber, flagString } from '../command.js';
import { s3Spec } from '../../coordinator/distributed/weights-s3.js';
import { loadRunConfig } from '../../coordinator/load-config.js';
import { createDistributedRun, formatWorkers } from '../../coordinator/distributed/setup.js';
import { JobQueue } from '../../buffer/queue/job-queue.js';
import { withRetry } from '../../buffer/queue/retry.js';
import { checkRunId } from '../../core/run-id.js';

const usage =
  'coordinator CONFIG --buffer postgres://... --run RUN --weights DIR|s3://BUCKET/PREFIX [--s3-endpoint URL] [--s3-region R] [--watch] [--every S]';

command({
  name: 'coordinator',
  usage,
  summary: 'create a distributed run (buffer and job queue in PostgreSQL); explorers and trainers join it',
  booleanFlags: ['watch'],
  flags: ['buffer', 'run', 'weights', 'every', 's3-endpoint', 's3-region'],
  run: async (args) => {
    const file = args.positional[0];
    const url = flagString(args, 'buffer');
    const runId = flagString(args, 'run');
    const weights = flagString(args, 'weights');
    if (!file || !url || !runId || !weights) {
      console.error(`usage: rft ${usage}`);
      return 2;
    }
    // The id names folders (WEIGHTS/RUN/vN): `../outside` is refused here, by its flag.
    checkRunId(runId, '--run');
    if (!/^postgres(ql)?:\/\//.test(url)) {
      console.error('--buffer: a distributed run needs a postgres:// URL');
      return 2;
    }
    const s3 = weights.startsWith('s3://');
    if (!s3 && (args.flags['s3-endpoint'] !== undefined || args.flags['s3-region'] !== undefined)) {
      console.error('--s3-endpoint / --s3-region: only with --weights s3://BUCKET/PREFIX');
      return 2;
    }
    let spec;
    try {
      spec = s3
        ? s3Spec(weights, { endpoint: flagString(args, 's3-endpoint'), region: flagString(args, 's3-region') })
        : undefined;
    } catch (e) {
      console.error((e as Error).message);
      return 2;
    }
    // With S3, v0 is written to a staging folder here, uploaded, and the folder removed.
    const staging = s3 ? mkdtempSync(join(tmpdir(), 'rft-v0-')) : null;
    let r;
    try {
      r = await createDistributedRun(loadRunConfig(file, { distributed: true }), url, runId, staging ?? weights, spec);
    } finally {
      if (staging) rmSync(staging, { recursive: true, force: true });
    }
    console.log(JSON.stringify({ run: runId, ...r }));
    if (r.configDiffers) {
      const shown =
        r.configDiffers.slice(0, 12).join(', ') +
        (r.configDiffers.length > 12 ? `, ... (${r.configDiffers.length} in all)` : '');
      console.error(
        `rft: run ${runId} already exists in this database with another config: ${file} differs in ${shown}. ` +
          `Nothing was changed: the run keeps the config it was created with. To train with this one, give it a new --run id.`,
      );
      return 1;
    }
    if (!args.flags.watch) return 0;
    const q = await withRetry(() => JobQueue.open(url));
    try {
      for (;;) {
        const done = await withRetry(() => q.getState(runId, 'dist:done'));
        console.log(`\n${new Date().toISOString()} jobs ${JSON.stringify(await withRetry(() => q.counts(runId)))}`);
        console.log(formatWorkers(await withRetry(() => q.workers(runId))));
        if (done) return 0;
        await new Promise((res) => setTimeout(res, flagNumber(args, 'every', 5) * 1000));
      }
    } finally {
      await q.close();
    }
  },
});
