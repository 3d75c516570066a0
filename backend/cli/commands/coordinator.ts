// `rft coordinator CONFIG --buffer postgres://... --run RUN --weights DIR|s3://BUCKET/PREFIX [--watch]`:
// create a distributed run in PostgreSQL; with --watch, print the workers every few seconds until it
// is done. With s3://, the run keeps its weights in S3 or S3-compatible object storage (--s3-endpoint,
// --s3-region, --s3-addressing; credentials from each process's own AWS chain, never stored).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { command } from '../command.js';
import { DIST_FLAGS } from './distributed-flags.js';
import { s3Spec } from '../../coordinator/distributed/s3-spec.js';
import { loadRunConfig } from '../../coordinator/load-config.js';
import { createDistributedRun, formatWorkers } from '../../coordinator/distributed/setup.js';
import { JobQueue } from '../../buffer/queue/job-queue.js';
import { withRetry } from '../../buffer/queue/retry.js';
import { checkRunId } from '../../core/run-id.js';

export const coordinatorCommand = command({
  name: 'coordinator',
  args: 'CONFIG',
  summary: 'create a distributed run (buffer and job queue in PostgreSQL); explorers and trainers join it',
  flags: {
    ...DIST_FLAGS,
    weights: {
      type: 'string',
      value: 'DIR|s3://BUCKET/PREFIX',
      required: true,
      description: "where the run's weights are published (a folder every host reaches, or S3)",
    },
    's3-endpoint': { type: 'string', value: 'URL', description: 'an S3-compatible endpoint (with --weights s3://)' },
    's3-region': { type: 'string', value: 'R', description: 'the S3 region (with --weights s3://)' },
    's3-addressing': {
      type: 'string',
      choices: ['path', 'virtual'],
      description: 'path-style or virtual-hosted requests (default: path with --s3-endpoint, virtual on AWS)',
    },
    watch: { type: 'boolean', description: 'print the workers every few seconds until the run is done' },
    every: { type: 'number', value: 'S', default: 5, description: 'seconds between two prints of --watch' },
  },
  run: async ({ positional, flags, usage }) => {
    const file = positional[0];
    const { buffer: url, run: runId, weights } = flags;
    if (!file) {
      console.error(`usage: ${usage}`);
      return 2;
    }
    // The id names folders (WEIGHTS/RUN/vN): `../outside` is refused here, by its flag.
    checkRunId(runId, '--run');
    if (!/^postgres(ql)?:\/\//.test(url)) {
      console.error('--buffer: a distributed run needs a postgres:// URL');
      return 2;
    }
    const s3 = weights.startsWith('s3://');
    if (!s3 && (['s3-endpoint', 's3-region', 's3-addressing'] as const).some((f) => flags[f] !== undefined)) {
      console.error('--s3-endpoint / --s3-region / --s3-addressing: only with --weights s3://BUCKET/PREFIX');
      return 2;
    }
    let spec;
    try {
      spec = s3
        ? s3Spec(weights, {
            endpoint: flags['s3-endpoint'],
            region: flags['s3-region'],
            addressing: flags['s3-addressing'],
          })
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
    if (!flags.watch) return 0;
    const q = await withRetry(() => JobQueue.open(url));
    try {
      for (;;) {
        const done = await withRetry(() => q.getState(runId, 'dist:done'));
        console.log(`\n${new Date().toISOString()} jobs ${JSON.stringify(await withRetry(() => q.counts(runId)))}`);
        console.log(formatWorkers(await withRetry(() => q.workers(runId))));
        if (done) return 0;
        await new Promise((res) => setTimeout(res, flags.every * 1000));
      }
    } finally {
      await q.close();
    }
  },
});
